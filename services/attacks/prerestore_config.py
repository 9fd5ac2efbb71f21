"""Pre-restoration settings and the verdict label, shared by the pipeline config and the CLI.

Torch-free (pydantic and the warp family names only), so that the evaluation config can import
it without loading the attack. The attack itself is `services.attacks.prerestore`.

The **enrollment condition** says which enrollment speech the attacker compares the anonymized
trials with: ``original`` (Liu et al.'s condition and the default: the attacker holds clean
enrollment recordings) or ``anonymized`` (enrollment anonymized by the anonymizer under
evaluation). The two conditions can rank the modes in opposite ways on the same data, so every
result records its condition.

The **label** (`attack_label`) states what the attacker knows about the anonymizer, from both
the pre-restoration family and the data the attacker's recognizer was trained on
(PROTOCOLS.md sections 3 and 7):

- ``semi-informed``: the recognizer was trained on anonymized speech (section 3's semi-informed
  recognizer; the attacker ran the anonymizer on its training data, whatever family it sweeps);
- ``lazy-informed``: the recognizer was trained on original speech, but the attacker uses the
  anonymizer's algorithm without retraining: it sweeps the anonymizer's own transform family
  (the case Liu et al. prints in bold and calls semi-informed) or compares with anonymized
  enrollment (section 3's lazy-informed row);
- ``ignorant``: recognizer trained on original speech, original enrollment, and a family other
  than the anonymizer's;
- None: a recognizer trained on original speech with original enrollment against an anonymizer
  of unknown family (whether the family matches cannot be told).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from services.anonymizers.warps import WARP_FAMILIES, TransformFamily
from services.errors import InvalidInputError

PrerestorationMode = Literal["enrollment", "trial"]
Implementation = Literal["feature", "waveform"]
EnrollmentModel = Literal["speaker_mean", "per_utterance"]
EnrollmentCondition = Literal["original", "anonymized"]
AttackerTraining = Literal["original", "anonymized"]
PipelineAttacker = Literal["ignorant", "semi-informed"]
Label = Literal["semi-informed", "lazy-informed", "ignorant"]

MODES: tuple[PrerestorationMode, ...] = ("enrollment", "trial")
ENROLLMENT_CONDITIONS: tuple[EnrollmentCondition, ...] = ("original", "anonymized")
ATTACKER_TRAININGS: tuple[AttackerTraining, ...] = ("original", "anonymized")
PIPELINE_ATTACKER_TRAINING: dict[PipelineAttacker, AttackerTraining] = {
    "ignorant": "original",
    "semi-informed": "anonymized",
}
"""The data each of the pipeline's recognizers is trained on (PROTOCOLS.md section 3)."""


class PrerestorationConfig(BaseModel):
    """De-anonymization by pre-restoration (Liu et al., PROTOCOLS.md section 7).

    ``attackers`` is read by the evaluation pipeline only; the CLI names its recognizer's
    training data with ``--attacker-training``.
    """

    model_config = ConfigDict(extra="forbid")

    attackers: list[PipelineAttacker] = Field(
        default_factory=lambda: list[PipelineAttacker](["ignorant"]),
        min_length=1,
        description="Recognizers attacked with pre-restoration: ignorant = trained on original "
        "speech (Liu et al.'s setting), semi-informed = trained on anonymized speech.",
    )
    families: list[TransformFamily] = Field(
        default_factory=lambda: list[TransformFamily](
            ["pitch", "bilinear", "quadratic", "power", "piecewise_linear"]
        ),
        min_length=1,
        description="Transform families (each sweeps its Liu et al. Table 1 grid).",
    )
    modes: list[PrerestorationMode] = Field(
        default_factory=lambda: list[PrerestorationMode](["enrollment", "trial"]),
        min_length=1,
        description="enrollment: transform the enrollment side; trial: the trial side.",
    )
    enrollment: EnrollmentCondition = Field(
        "original",
        description="Enrollment speech compared with the anonymized trials: original (Liu "
        "et al.'s condition) or anonymized. Recorded with every result; the two can rank the "
        "modes in opposite ways.",
    )
    implementation: Implementation = Field(
        "feature",
        description="feature: warp one STFT per utterance (fast); waveform: re-synthesize.",
    )
    enrollment_model: EnrollmentModel = Field(
        "speaker_mean",
        description="Enrollment embeddings averaged per speaker, or one per utterance.",
    )


def anonymizer_family_of(name: str, params: Mapping[str, Any] | None = None) -> str:
    """The transform family of a built-in anonymizer spec: ``pitch``, the VTLN warp, or ``name``.

    ``vtln`` without a ``warp`` parameter is ``bilinear`` (its default); any other name (e.g.
    ``mcadams``, an external system) is returned as is and matches no pre-restoration family.
    """
    if name == "vtln":
        return str((params or {}).get("warp", "bilinear"))
    return name


def family_matches(attack_family: str, anonymizer_family: str | None) -> bool | None:
    """Whether the pre-restoration family is the anonymizer's (None: anonymizer unknown).

    ``anonymizer_family`` ``vtln`` (warp unknown) matches every VTLN warp.
    """
    if anonymizer_family is None:
        return None
    if anonymizer_family == "vtln":
        return attack_family in WARP_FAMILIES
    return attack_family == anonymizer_family


def check_attack_condition(attacker_training: str, enrollment_condition: str) -> None:
    """`InvalidInputError` unless both are ``original`` or ``anonymized``."""
    if attacker_training not in ATTACKER_TRAININGS:
        raise InvalidInputError(
            f"attacker training must be 'original' or 'anonymized', got {attacker_training!r}"
        )
    if enrollment_condition not in ENROLLMENT_CONDITIONS:
        raise InvalidInputError(
            f"enrollment condition must be 'original' or 'anonymized', got {enrollment_condition!r}"
        )


def attack_label(
    attack_family: str,
    anonymizer_family: str | None,
    attacker_training: AttackerTraining,
    enrollment_condition: EnrollmentCondition,
) -> Label | None:
    """What the pre-restoration attacker knows about the anonymizer (module docstring).

    ``attacker_training``: the data the attacker's recognizer was trained on;
    ``enrollment_condition``: the enrollment speech the trials are compared with.
    """
    check_attack_condition(attacker_training, enrollment_condition)
    if attacker_training == "anonymized":
        return "semi-informed"
    if enrollment_condition == "anonymized":
        return "lazy-informed"
    match = family_matches(attack_family, anonymizer_family)
    if match is None:
        return None
    return "lazy-informed" if match else "ignorant"
