"""The attacker trainer's data and reproducibility (``training.py``): fixed-length crops, the
per-epoch random streams, the input checks, the data fingerprint checked on resume, and the
RNG state saved in (and restored from) ``last.pt``."""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import torch
from torch.utils.data import Dataset

from services.attacker.embeddings import check_waveforms
from services.attacker.training_records import TrainingItem
from services.errors import InvalidInputError


class CropDataset(Dataset[torch.Tensor]):
    """Fixed-length crops; the crop starts are drawn in the main process, so workers are neutral."""

    def __init__(self, waveforms: Sequence[np.ndarray], crop_samples: int) -> None:
        self.waveforms = waveforms
        self.crop_samples = crop_samples
        self.starts = np.zeros(len(waveforms), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.waveforms)

    def __getitem__(self, i: int) -> torch.Tensor:
        w = self.waveforms[i]
        n = self.crop_samples
        if len(w) >= n:
            crop = w[self.starts[i] : self.starts[i] + n]
        else:
            crop = np.resize(w, n)  # repeats the utterance cyclically
        return torch.from_numpy(np.ascontiguousarray(crop, dtype=np.float32))


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    # Independent per-epoch streams: resuming at any epoch reproduces its crops and order.
    state = np.random.SeedSequence([seed & 0xFFFFFFFF, epoch]).generate_state(2, np.uint64)
    return torch.Generator().manual_seed(int(state[0] & np.uint64(0x7FFFFFFFFFFFFFFF)))


def normalize_items(items: Sequence[Any], name: str) -> list[TrainingItem]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InvalidInputError(f"{name}: expected a sequence of (waveform, speaker, target)")
    out: list[TrainingItem] = []
    for i, item in enumerate(items):
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise InvalidInputError(f"{name}[{i}]: expected (waveform, speaker[, target])")
        wav, spk = item[0], item[1]
        tgt = item[2] if len(item) == 3 else None
        if not isinstance(spk, str) or not spk:
            raise InvalidInputError(f"{name}[{i}]: speaker label must be a non-empty str")
        if tgt is not None and not isinstance(tgt, str):
            raise InvalidInputError(f"{name}[{i}]: target label must be str or None")
        out.append(TrainingItem(wav, spk, tgt))
    if out:
        check_waveforms([it.waveform for it in out], f"{name} waveforms")
    return out


def data_fingerprint(train: Sequence[TrainingItem], val: Sequence[TrainingItem]) -> str:
    """Cheap identity of the data (labels, lengths, first samples), checked when resuming."""
    h = hashlib.sha256()
    for part in (train, val):
        h.update(b"|part|")
        for it in part:
            h.update(f"{it.speaker}\x00{it.target}\x00{len(it.waveform)}\x00".encode())
            h.update(it.waveform[:64].tobytes())
    return h.hexdigest()


def rng_state() -> dict[str, Any]:
    # The legacy global NumPy RNG is what third-party code may draw from, so it is checkpointed.
    np_state = cast(tuple[Any, ...], np.random.get_state())  # noqa: NPY002
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "keys": torch.from_numpy(np.asarray(np_state[1], dtype=np.int64)),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "cached_gaussian": float(np_state[4]),
        },
        "python": random.getstate(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state(  # noqa: NPY002
        (
            "MT19937",
            n["keys"].numpy().astype(np.uint32),
            n["pos"],
            n["has_gauss"],
            n["cached_gaussian"],
        )
    )
    random.setstate(_as_python_state(state["python"]))
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _as_python_state(s: Any) -> Any:
    # torch.load returns lists where random.getstate() had tuples.
    return tuple(_as_python_state(x) for x in s) if isinstance(s, (list, tuple)) else s


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)  # noqa: NPY002
    torch.manual_seed(seed)


@contextmanager
def deterministic(enabled: bool, device: torch.device) -> Iterator[None]:
    if not enabled:
        yield
        return
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    previous = torch.are_deterministic_algorithms_enabled()
    previous_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous, warn_only=previous_warn)


def error_rate(cosines: torch.Tensor, labels: torch.Tensor) -> float:
    return float((cosines.argmax(dim=1) != labels).float().mean().item() * 100.0)
