"""Kept trials (``services.scoring.trial_scores``): a lossless round trip, per partition and with
fixed trial lists, and a grid fingerprint that names exactly the trials scored."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from services.scoring import ScoredTrials, ScoreMatrix, eer_report
from services.scoring.trial_scores import (
    load_scored_trials,
    save_scored_trials,
    speaker_trials,
    trial_grid_fingerprint,
)


def _matrix(gender: str, n_rows: int, n_cols: int, *, listed: bool, seed: int) -> ScoreMatrix:
    rng = np.random.default_rng(seed)
    rows = np.array([f"{gender}{k % n_cols}" for k in range(n_rows)])
    cols = np.array([f"{gender}{k}" for k in range(n_cols)])
    mask = rng.random((n_rows, n_cols)) < 0.7 if listed else None
    if mask is not None:
        mask[np.arange(n_rows), np.arange(n_rows) % n_cols] = True  # every target listed
    return ScoreMatrix(
        rng.normal(size=(n_rows, n_cols)).astype(np.float32),
        rows,
        np.array([gender] * n_rows),
        cols,
        np.array([gender] * n_cols),
        listed=mask,
    )


@pytest.mark.parametrize("listed", [False, True])
def test_round_trip_keeps_every_partition_and_mask(tmp_path: Path, listed: bool) -> None:
    scored = ScoredTrials(
        "per_gender",
        {
            "f": _matrix("f", 12, 4, listed=listed, seed=1),
            "m": _matrix("m", 9, 3, listed=listed, seed=2),
        },
    )
    save_scored_trials(tmp_path / "trials.npz", scored, grid="g")
    back, grid = load_scored_trials(tmp_path / "trials.npz")
    assert grid == "g" and back.gender_mode == "per_gender" and list(back.partitions) == ["f", "m"]
    for name, matrix in scored.partitions.items():
        other = back.partitions[name]
        np.testing.assert_array_equal(other.scores, matrix.scores)
        np.testing.assert_array_equal(other.row_speaker_ids, matrix.row_speaker_ids)
        np.testing.assert_array_equal(other.col_genders, matrix.col_genders)
        assert (other.listed is None) == (matrix.listed is None)
        if matrix.listed is not None:
            np.testing.assert_array_equal(other.listed, matrix.listed)
    assert eer_report(back).eer_percent == eer_report(scored).eer_percent
    pooled = speaker_trials(back)
    n_trials = sum(int(m.trial_mask().sum()) for m in scored.partitions.values())
    assert pooled.scores.size == pooled.speaker_ids.size == n_trials
    # The same bytes through a stream (how the compare page reads an artifact).
    buffer = io.BytesIO()
    save_scored_trials(buffer, scored, grid="g")
    assert load_scored_trials(buffer.getvalue())[1] == "g"


def test_grid_fingerprint_names_the_trials_exactly() -> None:
    base = trial_grid_fingerprint(["t1", "t2"], ["e1"], "pooled")
    assert base == trial_grid_fingerprint(["t1", "t2"], ["e1"], "pooled")
    assert base != trial_grid_fingerprint(["t2", "t1"], ["e1"], "pooled")  # order matters
    assert base != trial_grid_fingerprint(["t1", "t2"], ["e1", "e2"], "pooled")
    assert base != trial_grid_fingerprint(["t1", "t2"], ["e1"], "per_gender")
    assert base != trial_grid_fingerprint(["t1", "t2"], ["e1"], "pooled", {"lists": []})
