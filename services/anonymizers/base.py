"""The `Anonymizer` interface every anonymizer (built-in, container, archive) satisfies."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.corpus.manifest import Gender


@dataclass(frozen=True)
class VoiceProfile:
    """What a built-in converter needs to know about a voice.

    ``median_f0_hz``: median F0 of voiced frames (Hz). ``formant_scale``: a relative vocal-tract
    length measure (dimensionless; larger = higher formants, shorter tract).
    """

    median_f0_hz: float
    formant_scale: float


@dataclass(frozen=True)
class TargetVoice:
    """A target speaker chosen by the target selection algorithm (TSA)."""

    target_id: str
    gender: Gender
    profile: VoiceProfile | None = None


@dataclass(frozen=True)
class AnonymizationItem:
    """One utterance to anonymize: 16 kHz mono float32 waveform, its source, and its target."""

    utt_id: str
    waveform: np.ndarray
    sample_rate: int
    source_speaker_id: str
    source_gender: Gender
    target: TargetVoice | None = None
    source_profile: VoiceProfile | None = None


class Anonymizer(ABC):
    """Turns a batch of utterances into anonymized waveforms.

    Contract: the output for each item is mono float32 at 16 kHz, finite, within one 10 ms frame
    of the input's duration, and deterministic for a given ``seed``.
    """

    name: str = "anonymizer"

    @abstractmethod
    def anonymize(self, items: Sequence[AnonymizationItem], seed: int) -> list[np.ndarray]:
        """Anonymize ``items``; returns one waveform per item, in order."""

    def config(self) -> dict[str, object]:
        """What determines the output besides the input, seed and targets (JSON-able).

        Hashed to decide whether existing outputs can be reused; subclasses add their parameters.
        """
        return {"name": self.name, "class": type(self).__name__}
