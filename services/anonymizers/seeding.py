"""Order-independent seeded randomness: every draw is a function of (seed, salt, key).

Deriving each utterance's random numbers from a hash of its id (instead of consuming one global
generator in input order) makes results independent of batch composition and input order.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _digest(*parts: object) -> bytes:
    blob = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return hashlib.sha256(blob).digest()


def keyed_rng(*parts: object) -> np.random.Generator:
    """A NumPy generator seeded by the SHA-256 of ``parts`` (e.g. seed, salt, utt_id)."""
    return np.random.default_rng(int.from_bytes(_digest(*parts)[:16], "little"))


def keyed_uniform(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` (53 bits of their SHA-256)."""
    return (int.from_bytes(_digest(*parts)[:8], "little") >> 11) / float(1 << 53)


def keyed_int(*parts: object) -> int:
    """A 128-bit non-negative integer fixed by ``parts``."""
    return int.from_bytes(_digest(*parts)[:16], "little")
