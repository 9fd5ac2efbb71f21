"""TEST-ONLY built-ins that destroy speech: ``silence`` and ``noise`` (for the utility checks).

They exist to show that utility metrics and the usable-speech guard catch what privacy metrics
reward (an attacker cannot recognize anyone in silence or noise, so their EER is about 50 %). They
are registered in `services.anonymizers.registry` under `TEST_ONLY_NAMES` so an evaluation config
can name them (``anonymizer: {kind: builtin, name: silence}``), but they are not in
`BUILTIN_NAMES`, the list the platform offers to anonymizers' makers.

Both follow the `Anonymizer` contract: mono float32 at 16 kHz, finite, exactly the input's length,
deterministic for a given seed (and independent of batch order: each utterance's noise is drawn
from (seed, utt_id)).

- ``silence``: digital zeros.
- ``noise``: Gaussian noise at the input's RMS level (peak at most `PEAK_LIMIT`), with a spectral
  colour: ``white`` (flat), ``pink`` (power 1/f), ``brown`` (1/f^2) or ``speech`` (the input's own
  magnitude spectrum with random phases: speech-shaped noise, the hardest of the four to tell
  from speech by its long-term spectrum).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.anonymizers.base import AnonymizationItem, VoiceProfile
from services.anonymizers.builtin import BuiltinAnonymizer, finish_waveform, validate_item
from services.anonymizers.seeding import keyed_rng
from services.errors import InvalidInputError

NOISE_COLORS: tuple[str, ...] = ("white", "pink", "brown", "speech")
"""Spectral colours of the ``noise`` test anonymizer."""

_COLOR_EXPONENT = {"white": 0.0, "pink": 1.0, "brown": 2.0}
"""Power spectrum ~ 1 / f^exponent."""


class _DegenerateAnonymizer(BuiltinAnonymizer):
    """A parameterless built-in: the one-parameter machinery is bypassed (parameter 0.0)."""

    uses_profiles = False

    def __init__(self) -> None:
        super().__init__(fixed=None, jitter=0.0)

    def _parameter_from_profiles(self, source: VoiceProfile, target: VoiceProfile) -> float:
        return self.identity

    def transform(self, waveform: np.ndarray, parameter: float) -> np.ndarray:
        raise NotImplementedError(f"{self.name} draws per utterance: use anonymize()")

    def _output(self, item: AnonymizationItem, x: np.ndarray, seed: int) -> np.ndarray:
        raise NotImplementedError

    def anonymize_with_parameters(
        self, items: Sequence[AnonymizationItem], seed: int
    ) -> tuple[list[np.ndarray], list[float]]:
        """One output per item (input length, float32); the recorded parameter is 0.0."""
        out = []
        for item in items:
            x = validate_item(item)
            out.append(finish_waveform(self._output(item, x, seed), x))
        return out, [0.0] * len(out)


class SilenceAnonymizer(_DegenerateAnonymizer):
    """TEST ONLY: every output is digital silence of the input's length."""

    name = "silence"
    family = "silence"

    def _output(self, item: AnonymizationItem, x: np.ndarray, seed: int) -> np.ndarray:
        return np.zeros(x.size)


class NoiseAnonymizer(_DegenerateAnonymizer):
    """TEST ONLY: seeded Gaussian noise of a spectral ``color`` at the input's RMS level."""

    name = "noise"
    family = "noise"

    def __init__(self, color: str = "white") -> None:
        super().__init__()
        if color not in NOISE_COLORS:
            raise InvalidInputError(
                f"noise: color must be one of {', '.join(NOISE_COLORS)}, got {color!r}"
            )
        self.color = color

    def _output(self, item: AnonymizationItem, x: np.ndarray, seed: int) -> np.ndarray:
        rng = keyed_rng(self.family, self.color, seed, item.utt_id)
        n = x.size
        if self.color == "speech":
            # The input's magnitude spectrum, random phases: same long-term spectrum, no
            # harmonic structure in time.
            phases = np.exp(2j * np.pi * rng.random(n // 2 + 1))
            return np.fft.irfft(np.abs(np.fft.rfft(x)) * phases, n)
        white = np.fft.rfft(rng.standard_normal(n))
        freqs = np.fft.rfftfreq(n)
        # Amplitude ~ f^(-exponent/2); DC gets the lowest nonzero frequency's gain (no offset).
        f = np.maximum(freqs, freqs[1] if freqs.size > 1 else 1.0)
        return np.fft.irfft(white * f ** (-_COLOR_EXPONENT[self.color] / 2), n)

    def config(self) -> dict[str, object]:
        """Name, family and colour: all that determines the output besides input and seed."""
        return {**super().config(), "color": self.color}
