"""Kept trial sets (``services.scoring.trial_scores``) for tests of the compare page: built
from a formula, stored as a job's artifact."""

from __future__ import annotations

import io

import numpy as np
from sqlalchemy.orm import Session

from services.platform import results
from services.scoring import ScoredTrials, ScoreMatrix
from services.scoring.trial_scores import save_scored_trials, trials_path
from services.storage.blob_interface import BlobStore


def trial_set_bytes(separation: float, *, n_speakers: int = 12, grid: str = "grid-1") -> bytes:
    """3 trial utterances per speaker x one enrollment model per speaker; speaker k's targets
    lie ``separation`` above its non-targets, less for the first speakers (the same hard
    speakers for every system: what pairing cancels)."""
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(n_speakers), 3)
    cols = np.arange(n_speakers)
    target = rows[:, None] == cols[None, :]
    hardness = np.linspace(-1.0, 1.0, n_speakers)[rows][:, None]
    scores = rng.normal(0.0, 1.0, target.shape) + target * (separation + hardness)
    speakers = np.array([f"spk{k:02d}" for k in range(n_speakers)])
    genders = np.array(["f"] * n_speakers)
    matrix = ScoreMatrix(scores, speakers[rows], genders[rows], speakers[cols], genders[cols])
    buffer = io.BytesIO()
    save_scored_trials(buffer, ScoredTrials("pooled", {"all": matrix}), grid=grid)
    return buffer.getvalue()


def keep_trials(
    session: Session,
    store: BlobStore,
    job_id: int,
    data: bytes,
    *,
    scenario: str = "semi-informed",
    backend: str = "cosine",
) -> None:
    """Store ``data`` as the job's kept trials of (scenario, back-end), seed 0, as the report
    does."""
    key = f"jobs/{job_id}/" + trials_path("baseline", scenario, backend, 0)
    info = store.put_bytes(key, data)
    assert info.sha256 is not None
    artifact = results.ArtifactRecord(key, info.size_bytes, info.sha256)
    results.record_results_and_artifacts(session, job_id, artifacts=[artifact])
