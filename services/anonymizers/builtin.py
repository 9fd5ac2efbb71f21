"""What the built-in anonymizers share: parameter modes, the output contract, validation.

Each built-in transforms a waveform with one scalar parameter per utterance, chosen by one of
three modes (in this order of precedence):

1. **fixed**: ``fixed`` is set: every utterance gets exactly that value (pre-restoration sweeps).
2. **target**: the item has a target voice. With profiles on both sides the parameter is derived
   from source and target (`_parameter_from_profiles`); with a target id but no profile it is a
   deterministic function of the target id (the target *is* a parameter value). A small seeded
   jitter (std ``jitter``) drawn from (seed, utt_id) is added in both cases.
3. **random**: no target: a seeded draw per utterance from (seed, utt_id), with the same
   distribution as the target-id mode.

Outputs meet the `Anonymizer` contract: mono float32, finite, exactly the input length, RMS level
of the input, peak at most `PEAK_LIMIT`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from services.anonymizers.base import AnonymizationItem, Anonymizer, VoiceProfile
from services.anonymizers.seeding import keyed_rng, keyed_uniform
from services.anonymizers.voice import estimate_voice_profile
from services.audio import SAMPLE_RATE_HZ
from services.errors import InvalidInputError

PEAK_LIMIT = 0.99
"""Largest absolute sample value of an anonymized waveform (just under 0 dBFS)."""


def finish_waveform(y: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Crop/pad ``y`` to ``reference``'s length, match its RMS, limit the peak; float32.

    Non-finite samples (should not occur) are zeroed rather than propagated.
    """
    n = len(reference)
    y = np.nan_to_num(np.asarray(y, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    y = y[:n] if len(y) >= n else np.concatenate([y, np.zeros(n - len(y))])
    ref_rms = float(np.sqrt(np.mean(np.asarray(reference, dtype=np.float64) ** 2))) if n else 0.0
    out_rms = float(np.sqrt(np.mean(y**2))) if n else 0.0
    if out_rms > 1e-12 and ref_rms > 0.0:
        y = y * (ref_rms / out_rms)
    peak = float(np.max(np.abs(y))) if n else 0.0
    if peak > PEAK_LIMIT:
        y = y * (PEAK_LIMIT / peak)
    return y.astype(np.float32)


def validate_item(item: AnonymizationItem) -> np.ndarray:
    """The item's waveform as float64 1-D; InvalidInputError naming the utterance otherwise."""
    if item.sample_rate != SAMPLE_RATE_HZ:
        raise InvalidInputError(
            f"{item.utt_id}: sample rate {item.sample_rate} Hz, built-ins need {SAMPLE_RATE_HZ} Hz"
        )
    x = np.asarray(item.waveform, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise InvalidInputError(f"{item.utt_id}: waveform must be a non-empty 1-D array")
    if not np.all(np.isfinite(x)):
        raise InvalidInputError(f"{item.utt_id}: waveform contains NaN or infinity")
    return x


class BuiltinAnonymizer(Anonymizer):
    """A one-parameter signal transform with fixed / target / random parameter modes."""

    family: str = "builtin"
    parameter_name: str = "parameter"
    parameter_low: float = 0.0
    parameter_high: float = 1.0
    identity: float = 0.0
    uses_profiles: bool = True

    def __init__(self, fixed: float | None = None, jitter: float = 0.0) -> None:
        if fixed is not None and not (self.parameter_low <= fixed <= self.parameter_high):
            raise InvalidInputError(
                f"{self.name}: {self.parameter_name}={fixed} outside "
                f"[{self.parameter_low}, {self.parameter_high}]"
            )
        if not jitter >= 0.0:
            raise InvalidInputError(f"{self.name}: jitter must be >= 0, got {jitter}")
        self.fixed = None if fixed is None else float(fixed)
        self.jitter = float(jitter)

    # -- parameter choice ---------------------------------------------------------------------

    def _clip(self, value: float) -> float:
        return float(np.clip(value, self.parameter_low, self.parameter_high))

    def _draw_away_from_identity(self, u_side: float, u_size: float) -> float:
        """A value on one side of the identity, 25 % to 100 % of the way to that range end."""
        if u_side < 0.5:
            span = self.parameter_high - self.identity
            return self.identity + (0.25 + 0.75 * u_size) * span
        span = self.identity - self.parameter_low
        return self.identity - (0.25 + 0.75 * u_size) * span

    def _parameter_from_target_id(self, target_id: str) -> float:
        """The parameter a target id stands for when no target profile is known."""
        return self._draw_away_from_identity(
            keyed_uniform(self.family, "target-side", target_id),
            keyed_uniform(self.family, "target-size", target_id),
        )

    @abstractmethod
    def _parameter_from_profiles(self, source: VoiceProfile, target: VoiceProfile) -> float:
        """The parameter that moves ``source`` toward ``target`` (before jitter)."""

    def _source_profile(self, item: AnonymizationItem, x: np.ndarray) -> VoiceProfile:
        if item.source_profile is not None:
            return item.source_profile
        return estimate_voice_profile(x)

    def parameter_for(self, item: AnonymizationItem, seed: int) -> float:
        """The parameter applied to ``item`` under ``seed`` (see the module docstring)."""
        if self.fixed is not None:
            return self.fixed
        rng = keyed_rng(self.family, "jitter", seed, item.utt_id)
        if item.target is None:
            u = keyed_rng(self.family, "random", seed, item.utt_id).random(2)
            return self._clip(self._draw_away_from_identity(float(u[0]), float(u[1])))
        if self.uses_profiles and item.target.profile is not None:
            x = validate_item(item)
            base = self._parameter_from_profiles(self._source_profile(item, x), item.target.profile)
        else:
            base = self._parameter_from_target_id(item.target.target_id)
        return self._clip(base + self.jitter * float(rng.standard_normal()))

    # -- transform ----------------------------------------------------------------------------

    @abstractmethod
    def transform(self, waveform: np.ndarray, parameter: float) -> np.ndarray:
        """Apply the transform with ``parameter`` to a 16 kHz waveform (any length out)."""

    def anonymize(self, items: Sequence[AnonymizationItem], seed: int) -> list[np.ndarray]:
        """Anonymize each item with its own parameter; order-independent and deterministic."""
        return self.anonymize_with_parameters(items, seed)[0]

    def anonymize_with_parameters(
        self, items: Sequence[AnonymizationItem], seed: int
    ) -> tuple[list[np.ndarray], list[float]]:
        """`anonymize`, also returning the parameter applied to each item (for the record)."""
        out, parameters = [], []
        for item in items:
            x = validate_item(item)
            parameter = self.parameter_for(item, seed)
            out.append(finish_waveform(self.transform(x, parameter), x))
            parameters.append(parameter)
        return out, parameters

    def config(self) -> dict[str, object]:
        """Everything that determines the output besides the input, seed and targets."""
        return {
            "name": self.name,
            "family": self.family,
            "fixed": self.fixed,
            "jitter": self.jitter,
        }
