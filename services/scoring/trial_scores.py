"""A scoring run's trials on disk: every score with its speakers, for comparisons made later.

The score stage writes one ``trials.npz`` per (scenario, back-end, seed) and the report keeps a
copy per row as a job artifact, so two jobs can be compared trial by trial long after they ran
(the compare page's paired speaker bootstrap and per-speaker EER scatter). The file holds each
partition's score matrix (rows = trial utterances, columns = enrollment models) with the row
and column speakers and genders and, with fixed trial lists, the mask of the listed pairs; and
a fingerprint of the trial grid. Two runs share their trials exactly when their fingerprints
are equal: same trial and enrollment utterances in the same order, same gender handling, same
trial lists.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from services.metrics import SpeakerTrials
from services.scoring.scorer import ScoredTrials, ScoreMatrix

TRIALS_NAME = "trials.npz"
"""The file name of a scoring run's trials (score stage folder, job artifact)."""

TRIALS_DIR = "trials"
"""Folder of a result (and of a job's artifacts) holding each row's trials."""


def trials_path(attacker: str, scenario: str, backend: str, seed: int) -> str:
    """Where a row's trials lie, relative to the result folder (a job's artifact key suffix)."""
    return f"{TRIALS_DIR}/{attacker}/{scenario}/{backend}/seed{seed}.npz"


_FIELDS = ("scores", "row_speaker_ids", "row_genders", "col_speaker_ids", "col_genders")


def trial_grid_fingerprint(
    trial_utterances: Sequence[str],
    enrollment_utterances: Sequence[str],
    gender_mode: str,
    fixed_trials: Mapping[str, Any] | None = None,
) -> str:
    """sha256 (hex) naming a trial grid: the utterance ids in order, the gender handling and the
    fixed trial lists (None: every pair is a trial)."""
    document = {
        "trial": list(trial_utterances),
        "enrollment": list(enrollment_utterances),
        "gender_mode": gender_mode,
        "fixed_trials": fixed_trials,
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def save_scored_trials(path: Path | IO[bytes], scored: ScoredTrials, *, grid: str) -> None:
    """Write ``scored`` and its grid fingerprint (:func:`trial_grid_fingerprint`) to ``path``
    (a file name or a binary stream)."""
    arrays: dict[str, np.ndarray] = {
        "gender_mode": np.array(scored.gender_mode),
        "grid": np.array(grid),
        "partitions": np.array(list(scored.partitions), dtype=str),
    }
    for name, matrix in scored.partitions.items():
        for field in _FIELDS:
            value = np.asarray(getattr(matrix, field))
            arrays[f"{name}.{field}"] = value.astype(str) if value.dtype == object else value
        if matrix.listed is not None:
            arrays[f"{name}.listed"] = matrix.listed
    np.savez_compressed(path, allow_pickle=False, **arrays)


def load_scored_trials(source: Path | bytes) -> tuple[ScoredTrials, str]:
    """(the scored trials, their grid fingerprint) from a file or its bytes."""
    handle = io.BytesIO(source) if isinstance(source, bytes) else source
    with np.load(handle, allow_pickle=False) as data:
        partitions: dict[str, ScoreMatrix] = {}
        for name in data["partitions"].tolist():
            listed = f"{name}.listed"
            fields = {field: data[f"{name}.{field}"] for field in _FIELDS}
            partitions[str(name)] = ScoreMatrix(
                **fields, listed=data[listed] if listed in data.files else None
            )
        scored = ScoredTrials(str(data["gender_mode"]), partitions)  # type: ignore[arg-type]
        return scored, str(data["grid"])


def speaker_trials(scored: ScoredTrials) -> SpeakerTrials:
    """Every trial of every partition, pooled, with the trial utterance's speaker: what the
    speaker bootstrap of the EER resamples."""
    parts = list(scored.partitions.values())
    masks = [m.trial_mask() for m in parts]
    return SpeakerTrials(
        scores=np.concatenate([m.scores[t] for m, t in zip(parts, masks, strict=True)]).astype(
            np.float64
        ),
        is_target=np.concatenate([m.target_mask()[t] for m, t in zip(parts, masks, strict=True)]),
        speaker_ids=np.concatenate(
            [
                np.broadcast_to(m.row_speaker_ids[:, None], m.scores.shape)[t]
                for m, t in zip(parts, masks, strict=True)
            ]
        ).astype(str),
    )


__all__ = [
    "TRIALS_DIR",
    "TRIALS_NAME",
    "load_scored_trials",
    "save_scored_trials",
    "speaker_trials",
    "trial_grid_fingerprint",
    "trials_path",
]
