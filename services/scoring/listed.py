"""Scoring fixed trial lists: exactly the listed (enrollment speaker, trial utterance) pairs.

The VoicePrivacy Challenge publishes its trials as lists of pairs (``<enroll speaker> <trial utt>
target|nontarget``). `score_listed_trials` scores every trial utterance against every enrollment
speaker model of its partition (the same matrices as `score_trials`, so the back-ends, AS-norm and
gender partitions work unchanged) and marks the listed pairs in each `ScoreMatrix.listed`: every
metric then counts only those pairs. A list may hold cross-gender pairs (a mixed-gender list):
the partitions of ``per_gender`` / ``mixed`` mode are by the trial utterance's gender and keep
every enrollment speaker as a column, so such a pair stays scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.scoring.normalization import ASNorm
from services.scoring.pairs import DEFAULT_MEMORY_BUDGET_BYTES, group_means, score_all_pairs
from services.scoring.scorer import ScoredTrials, ScoreMatrix, ScoringBackend, _pair_terms
from services.scoring.trials import GENDERS, EmbeddingSet, GenderMode, check_choice


@dataclass(frozen=True)
class ListedScores:
    """The scored partitions (listed pairs marked) and each listed pair's score, in list order."""

    scored: ScoredTrials
    pair_scores: np.ndarray
    """Score of pair k of the ``pairs`` given to `score_listed_trials` (float)."""
    pair_is_target: np.ndarray
    """Whether pair k is a target trial (same speaker on both sides)."""


def score_listed_trials(
    backend: ScoringBackend,
    trials: EmbeddingSet,
    trial_utt_ids: Sequence[str],
    enrollment: EmbeddingSet,
    pairs: Sequence[tuple[str, str]],
    gender_mode: GenderMode = "pooled",
    normalization: ASNorm | None = None,
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES,
    dtype: np.dtype | type = np.float32,
) -> ListedScores:
    """Scores of the listed ``pairs`` (enrollment speaker, trial utterance id).

    Enrollment models are per-speaker means (``speaker_mean``). ``trial_utt_ids`` names the rows
    of ``trials``. A pair naming an unknown trial utterance or enrollment speaker, or listed
    twice, raises ``ValueError``. Partitions: ``"all"`` (pooled) or one per trial gender.
    """
    check_choice(gender_mode, GenderMode, "gender_mode")
    utt_ids = np.asarray(trial_utt_ids).astype(str)
    if utt_ids.shape != (len(trials),):
        raise ValueError(f"{utt_ids.size} trial utterance ids for {len(trials)} trial embeddings")
    row_of = {u: i for i, u in enumerate(utt_ids.tolist())}
    spk, gen, inv = enrollment.speakers()
    col_of = {s: i for i, s in enumerate(spk.tolist())}
    rows = np.empty(len(pairs), dtype=np.int64)
    cols = np.empty(len(pairs), dtype=np.int64)
    for k, (speaker, utt) in enumerate(pairs):
        r, c = row_of.get(utt), col_of.get(speaker)
        if r is None:
            raise ValueError(f"listed trial utterance {utt!r} has no trial embedding")
        if c is None:
            raise ValueError(f"listed enrollment speaker {speaker!r} has no enrollment embedding")
        rows[k], cols[k] = r, c
    listed = np.zeros((len(trials), spk.size), dtype=bool)
    listed[rows, cols] = True
    if int(listed.sum()) != len(pairs):
        raise ValueError(f"{len(pairs) - int(listed.sum())} listed pair(s) are listed twice")
    vectors = backend.prepare(enrollment.embeddings)
    models = backend.speaker_model(group_means(vectors, inv, spk.size))
    groups: dict[str, np.ndarray]
    if gender_mode == "pooled":
        groups = {"all": np.arange(len(trials))}
    else:
        groups = {
            g: np.flatnonzero(trials.genders == g)
            for g in GENDERS
            if listed[trials.genders == g].any()
        }
    partitions: dict[str, ScoreMatrix] = {}
    pair_scores = np.full(len(pairs), np.nan)
    for key, idx in groups.items():
        terms = _pair_terms(
            backend,
            key,
            trials.embeddings[idx],
            models,
            normalization,
            memory_budget_bytes,
            dtype,
        )
        matrix = score_all_pairs(terms, memory_budget_bytes, dtype)
        partitions[key] = ScoreMatrix(
            matrix, trials.speaker_ids[idx], trials.genders[idx], spk, gen, listed[idx]
        )
        local = np.full(len(trials), -1, dtype=np.int64)
        local[idx] = np.arange(idx.size)
        mine = local[rows] >= 0
        pair_scores[mine] = matrix[local[rows[mine]], cols[mine]]
    is_target = trials.speaker_ids[rows] == spk[cols]
    return ListedScores(ScoredTrials(gender_mode, partitions), pair_scores, is_target)
