"""Speaker-level averaging shortcut equals the explicit all-pairs average."""

from __future__ import annotations

import numpy as np
import pytest

from services.scoring import (
    CosineBackend,
    PairScoreTerms,
    PLDABackend,
    TrialSet,
    score_trials,
    speaker_pair_mean_scores,
    speaker_pair_mean_scores_explicit,
    train_plda,
)
from services.scoring.synthetic import make_synthetic_speakers


def _explicit_average(terms: PairScoreTerms, rg: np.ndarray, cg: np.ndarray) -> np.ndarray:
    full = terms.left @ terms.right.T
    if terms.left_offset is not None:
        full = full + terms.left_offset[:, None]
    if terms.right_offset is not None:
        full = full + terms.right_offset[None, :]
    out = np.empty((rg.max() + 1, cg.max() + 1))
    for a in range(out.shape[0]):
        for b in range(out.shape[1]):
            out[a, b] = full[np.ix_(rg == a, cg == b)].mean()
    return out


def test_moments_equal_explicit_average_random_terms() -> None:
    rng = np.random.default_rng(0)
    n, m, k = 37, 23, 5
    terms = PairScoreTerms(
        rng.normal(size=(n, k)),
        rng.normal(size=(m, k)),
        rng.normal(size=n) * 10,
        rng.normal(size=m) * 10,
    )
    rg = rng.permutation(np.arange(n) % 6)
    cg = rng.permutation(np.arange(m) % 4)
    ref = _explicit_average(terms, rg, cg)
    np.testing.assert_allclose(speaker_pair_mean_scores(terms, rg, 6, cg, 4), ref, rtol=1e-12)
    for budget in (1, 300, 10**9):
        got = speaker_pair_mean_scores_explicit(terms, rg, 6, cg, 4, budget, np.float64)
        np.testing.assert_allclose(got, ref, rtol=1e-10)
    got32 = speaker_pair_mean_scores_explicit(terms, rg, 6, cg, 4)
    np.testing.assert_allclose(got32, ref, rtol=1e-5, atol=1e-4)


@pytest.fixture(scope="module")
def trial_set_and_model():  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    train = make_synthetic_speakers(40, 16, rng, 1.0, 0.5)
    x, ids, _ = train.sample(5, rng, dtype=np.float64)
    model = train_plda(x, ids, lda_dim=8, n_iter=4)
    ev = make_synthetic_speakers(9, 16, rng, 1.0, 0.5, prefix="ev")
    e, e_ids, e_gen = ev.sample(4, rng)
    t, t_ids, t_gen = ev.sample(3, rng)
    return TrialSet.from_arrays(t, t_ids, t_gen, e, e_ids, e_gen), model


@pytest.mark.parametrize("backend_name", ["plda", "cosine"])
@pytest.mark.parametrize("gender_mode", ["pooled", "per_gender"])
def test_speaker_pair_mean_equals_average_of_utterance_scores(  # type: ignore[no-untyped-def]
    trial_set_and_model, backend_name: str, gender_mode: str
) -> None:
    ts, model = trial_set_and_model
    backend = PLDABackend(model) if backend_name == "plda" else CosineBackend()
    utt = score_trials(
        backend, ts, enrollment="per_utterance", gender_mode=gender_mode, dtype=np.float64
    )
    short = score_trials(
        backend,
        ts,
        enrollment="per_utterance",
        gender_mode=gender_mode,
        aggregation="speaker_pair_mean",
    )
    expl = score_trials(
        backend,
        ts,
        enrollment="per_utterance",
        gender_mode=gender_mode,
        aggregation="speaker_pair_mean",
        speaker_pair_method="explicit",
        dtype=np.float64,
    )
    for key, m in utt.partitions.items():
        s = short.partitions[key]
        for a, ts_id in enumerate(s.row_speaker_ids):
            for b, es_id in enumerate(s.col_speaker_ids):
                block = m.scores[np.ix_(m.row_speaker_ids == ts_id, m.col_speaker_ids == es_id)]
                assert s.scores[a, b] == pytest.approx(block.mean(), rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(expl.partitions[key].scores, s.scores, rtol=1e-10, atol=1e-10)
        assert s.target_mask().sum() == s.scores.shape[0]
