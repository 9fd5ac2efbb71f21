"""The tiny evaluation configs of the tests: one base, per-test variations as overrides.

``tiny_config()`` is the in-process pipeline's tiny evaluation (12 synthetic speakers, the tiny
recognizer for 2 epochs, both back-ends): about a minute on 2 cores. The platform's protocols
have no ``anonymizer`` (each submission brings one), hence :func:`tiny_protocol_config` (the
protocol of the e2e and job tests) and :func:`micro_protocol_config` (8 speakers, 1 epoch: for
worker tests whose numbers do not matter).
"""

from __future__ import annotations

import copy
from typing import Any, Final


class _Omit:
    """Marker of a key to remove (see :func:`with_overrides`)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final = _Omit()

TINY_EVALUATION: Final[dict[str, Any]] = {
    "name": "tiny",
    "synthetic": {
        "n_speakers": 12,
        "utts_per_speaker": 8,
        "n_attacker_train_speakers": 6,
        "n_eval_speakers": 4,
        "n_target_speakers": 2,
        "enrollments_per_speaker": 3,
        "trials_per_speaker": 3,
        "min_duration_s": 2.0,
        "max_duration_s": 2.5,
    },
    "anonymizer": {"name": "pitch"},
    "scenarios": ["original", "ignorant", "semi-informed"],
    "training": {
        "preset": "tiny",
        "epochs": 2,
        "batch_size": 8,
        "crop_seconds": 1.5,
        "target_classifier": "observe",
    },
    "backends": ["cosine", "plda"],
    "metrics": {"bootstrap_resamples": 20},
}

# Every analysis at tiny size (``tiny_config(analyses=TINY_ANALYSES)``).
TINY_ANALYSES: Final[dict[str, Any]] = {
    "srd_representations": {"phone_units": 8, "bootstrap_resamples": 20},
    "size_study": {
        "target_seeds": [0, 1],
        "samples": 2,
        "speaker_counts": [2, None],
        "enrollment_counts": [1, 2],
        "trial_counts": [1, 2],
        "trial_sweep_enrollment": 2,
    },
    "prerestoration": {"attackers": ["ignorant", "semi-informed"], "families": ["pitch"]},
}


def with_overrides(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``base`` with ``overrides`` applied: a dict merges into the dict of the same
    key (recursively), :data:`OMIT` removes the key, any other value replaces it."""
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if value is OMIT:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = with_overrides(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def tiny_config(**overrides: Any) -> dict[str, Any]:
    """The tiny evaluation config (a fresh copy) with ``overrides`` (see :func:`with_overrides`)."""
    return with_overrides(TINY_EVALUATION, overrides)


def tiny_protocol_config(**overrides: Any) -> dict[str, Any]:
    """The platform's tiny protocol: the tiny evaluation without name and anonymizer, 6 utterances
    per speaker, 1 epoch, cosine only, 10 bootstrap resamples (e2e and job tests share its
    corpus and original-speech stages)."""
    protocol = tiny_config(
        name=OMIT,
        anonymizer=OMIT,
        synthetic={"utts_per_speaker": 6},
        training={"epochs": 1, "target_classifier": OMIT},
        backends=["cosine"],
        metrics={"bootstrap_resamples": 10},
    )
    return with_overrides(protocol, overrides)


def micro_protocol_config(**overrides: Any) -> dict[str, Any]:
    """A smaller protocol for worker tests whose numbers do not matter: 8 speakers of 4
    utterances, 2 enrollments and 2 trials each, the tiny recognizer for 1 epoch; scenarios,
    back-ends and metrics left to the config's defaults unless overridden."""
    micro = {
        "synthetic": {
            "n_speakers": 8,
            "utts_per_speaker": 4,
            "n_attacker_train_speakers": 4,
            "n_eval_speakers": 2,
            "n_target_speakers": 2,
            "enrollments_per_speaker": 2,
            "trials_per_speaker": 2,
            "min_duration_s": 2.0,
            "max_duration_s": 2.5,
        },
        "training": {"preset": "tiny", "epochs": 1},
    }
    return with_overrides(micro, overrides)
