"""AS-norm: equals a plain per-trial computation (cosine and PLDA), its invariances, its edge
cases, and that it composes with the streaming EER and the speaker-pair moment shortcut."""

from __future__ import annotations

import numpy as np
import pytest

from services.scoring import (
    ASNorm,
    CosineBackend,
    EmbeddingSet,
    PairScoreTerms,
    PLDABackend,
    TrialSet,
    eer_report,
    score_trials,
    streaming_eer_report,
    train_plda,
)
from services.scoring.normalization import as_norm_matrix, cohort_stats
from services.scoring.synthetic import make_synthetic_speakers


def _data(seed: int = 0, dim: int = 12, n_cohort_spk: int = 10) -> tuple[TrialSet, EmbeddingSet]:
    rng = np.random.default_rng(seed)
    pop = make_synthetic_speakers(6, dim, rng, between_scale=1.0, within_scale=0.8)
    e, e_spk, e_gen = pop.sample(3, rng)
    t, t_spk, t_gen = pop.sample(2, rng)
    cohort_pop = make_synthetic_speakers(n_cohort_spk, dim, rng, 1.0, 0.8, prefix="co")
    c, c_spk, c_gen = cohort_pop.sample(4, rng)
    return (
        TrialSet.from_arrays(t, t_spk, t_gen, e, e_spk, e_gen),
        EmbeddingSet(c, c_spk, c_gen, "cohort"),
    )


def _cos(x: np.ndarray, y: np.ndarray) -> float:
    x, y = x.astype(np.float64), y.astype(np.float64)
    return float(x @ y / np.sqrt((x @ x) * (y @ y)))


def _top_k_mean_std(values: list[float], k: int) -> tuple[float, float]:
    top = sorted(values, reverse=True)[:k]
    mean = sum(top) / len(top)
    var = sum((v - mean) ** 2 for v in top) / len(top)
    return mean, var**0.5


def _direct_as_norm(score, trials, models, cohort, k):  # type: ignore[no-untyped-def]
    """AS-norm written out per trial, as the papers define it (loops, no shortcuts)."""
    out = np.empty((len(trials), len(models)))
    for i, x in enumerate(trials):
        mu_x, sd_x = _top_k_mean_std([score(x, c) for c in cohort], k)
        for j, y in enumerate(models):
            mu_y, sd_y = _top_k_mean_std([score(y, c) for c in cohort], k)
            s = score(x, y)
            out[i, j] = 0.5 * (s - mu_y) / sd_y + 0.5 * (s - mu_x) / sd_x
    return out


def _speaker_means(es: EmbeddingSet) -> np.ndarray:
    return np.array(
        [
            es.embeddings[es.speaker_ids == s].astype(np.float64).mean(axis=0)
            for s in np.unique(es.speaker_ids)
        ]
    )


@pytest.mark.parametrize("k", [3, 7])
def test_cosine_as_norm_equals_direct_per_trial_computation(k: int) -> None:
    ts, cohort = _data()
    norm = ASNorm(cohort, top_k=k)
    scored = score_trials(CosineBackend(), ts, normalization=norm, dtype=np.float64)
    models = _speaker_means(ts.enrollment)
    expected = _direct_as_norm(_cos, ts.trials.embeddings, models, _speaker_means(cohort), k)
    np.testing.assert_allclose(scored.partitions["all"].scores, expected, rtol=1e-9, atol=1e-9)
    # float32 pair products (the default) agree to float32 precision
    f32 = score_trials(CosineBackend(), ts, normalization=norm).partitions["all"].scores
    np.testing.assert_allclose(f32, expected, atol=2e-4)


def test_plda_as_norm_equals_direct_per_trial_computation() -> None:
    ts, cohort = _data(seed=1, n_cohort_spk=12)
    model = train_plda(cohort.embeddings, cohort.speaker_ids, lda_dim=8, n_iter=3)
    backend = PLDABackend(model)
    scored = score_trials(
        backend, ts, enrollment="per_utterance", normalization=ASNorm(cohort, 5), dtype=np.float64
    )
    cohort_models = backend.speaker_model(
        np.array([
            model.project(cohort.embeddings[cohort.speaker_ids == s]).mean(axis=0)
            for s in np.unique(cohort.speaker_ids)
        ])
    )  # fmt: skip

    def llr(x: np.ndarray, y: np.ndarray) -> float:
        return float(model.llr(x[None, :], y[None, :])[0])

    expected = _direct_as_norm(
        llr,
        model.project(ts.trials.embeddings),
        model.project(ts.enrollment.embeddings),
        cohort_models,
        5,
    )
    np.testing.assert_allclose(scored.partitions["all"].scores, expected, rtol=1e-8, atol=1e-8)
    # the dense helper agrees with the operand form
    raw = score_trials(backend, ts, enrollment="per_utterance", dtype=np.float64)
    pt = model.project(ts.trials.embeddings)
    pe = model.project(ts.enrollment.embeddings)
    dense = as_norm_matrix(
        raw.partitions["all"].scores,
        np.array([[llr(x, c) for c in cohort_models] for x in pt]),
        np.array([[llr(y, c) for c in cohort_models] for y in pe]),
        5,
    )
    np.testing.assert_allclose(dense, expected, rtol=1e-8, atol=1e-8)


class _AffineCosine(CosineBackend):
    """Cosine scores mapped by s -> scale * s + shift (still a quadratic form)."""

    def __init__(self, scale: float, shift: float) -> None:
        self.scale, self.shift = scale, shift

    def score_terms(self, trial_vectors: np.ndarray, model_vectors: np.ndarray) -> PairScoreTerms:
        t = super().score_terms(trial_vectors, model_vectors)
        return PairScoreTerms(t.left * self.scale, t.right, np.full(t.n_rows, self.shift), None)


def test_as_norm_is_invariant_to_an_affine_map_of_the_raw_scores() -> None:
    ts, cohort = _data(seed=2)
    norm = ASNorm(cohort, top_k=4)
    base = score_trials(CosineBackend(), ts, normalization=norm, dtype=np.float64)
    mapped = score_trials(_AffineCosine(37.0, -5.0), ts, normalization=norm, dtype=np.float64)
    np.testing.assert_allclose(
        mapped.partitions["all"].scores, base.partitions["all"].scores, atol=1e-9
    )
    # while the raw scores do change
    raw = score_trials(_AffineCosine(37.0, -5.0), ts, dtype=np.float64).partitions["all"].scores
    assert not np.allclose(raw, score_trials(CosineBackend(), ts).partitions["all"].scores)


def test_cohort_embedding_scale_does_not_matter_for_cosine() -> None:
    ts, cohort = _data(seed=3)
    scaled = EmbeddingSet(cohort.embeddings * 1000.0, cohort.speaker_ids, cohort.genders)
    a = score_trials(CosineBackend(), ts, normalization=ASNorm(cohort, 4), dtype=np.float64)
    b = score_trials(CosineBackend(), ts, normalization=ASNorm(scaled, 4), dtype=np.float64)
    np.testing.assert_allclose(a.partitions["all"].scores, b.partitions["all"].scores, atol=1e-9)


def test_k_larger_than_the_cohort_is_clamped_to_the_cohort_size() -> None:
    ts, cohort = _data(seed=4, n_cohort_spk=6)
    big = score_trials(CosineBackend(), ts, normalization=ASNorm(cohort, 500), dtype=np.float64)
    full = score_trials(CosineBackend(), ts, normalization=ASNorm(cohort, 6), dtype=np.float64)
    np.testing.assert_array_equal(big.partitions["all"].scores, full.partitions["all"].scores)
    smaller = score_trials(CosineBackend(), ts, normalization=ASNorm(cohort, 3), dtype=np.float64)
    assert not np.allclose(smaller.partitions["all"].scores, full.partitions["all"].scores)


def test_edge_cases_raise_clear_errors() -> None:
    ts, cohort = _data(seed=5)
    with pytest.raises(ValueError, match="cohort_top_k must be >= 2"):
        ASNorm(cohort, top_k=1)
    one = cohort.select(cohort.speaker_ids == cohort.speaker_ids[0])
    with pytest.raises(ValueError, match="cohort of at least 2 speakers"):
        score_trials(CosineBackend(), ts, normalization=ASNorm(one, 5))
    same = EmbeddingSet(
        np.ones_like(cohort.embeddings), cohort.speaker_ids, cohort.genders, "cohort"
    )
    with pytest.raises(ValueError, match="standard deviation is 0"):
        score_trials(CosineBackend(), ts, normalization=ASNorm(same, 3))
    only_f = cohort.select(cohort.genders == "f")
    if (ts.trials.genders == "m").any():
        with pytest.raises(ValueError, match="no speaker of gender 'm'"):
            score_trials(
                CosineBackend(), ts, gender_mode="per_gender", normalization=ASNorm(only_f)
            )


def test_cohort_stats_blocks_do_not_change_the_statistics() -> None:
    rng = np.random.default_rng(6)
    terms = PairScoreTerms(rng.standard_normal((50, 8)), rng.standard_normal((30, 8)))
    whole = cohort_stats(terms, 10, memory_budget_bytes=10**9, dtype=np.float64)
    blocked = cohort_stats(terms, 10, memory_budget_bytes=1, dtype=np.float64)  # one row a block
    # (a different block shape may change the last bit of a BLAS product, nothing more)
    np.testing.assert_allclose(whole.mean, blocked.mean, rtol=1e-12)
    np.testing.assert_allclose(whole.std, blocked.std, rtol=1e-12)
    dense = terms.left @ terms.right.T
    top = -np.sort(-dense, axis=1)[:, :10]
    np.testing.assert_allclose(whole.mean, top.mean(axis=1))
    np.testing.assert_allclose(whole.std, top.std(axis=1))


@pytest.mark.parametrize("gender_mode", ["pooled", "per_gender", "mixed"])
def test_streaming_and_shortcut_paths_see_the_same_normalized_scores(gender_mode: str) -> None:
    ts, cohort = _data(seed=7, n_cohort_spk=12)
    norm = ASNorm(cohort, top_k=4)
    in_memory = eer_report(
        score_trials(CosineBackend(), ts, gender_mode=gender_mode, normalization=norm)  # type: ignore[arg-type]
    )
    streamed = streaming_eer_report(
        CosineBackend(),
        ts,
        gender_mode=gender_mode,
        normalization=norm,  # type: ignore[arg-type]
    )
    assert streamed.eer_percent == pytest.approx(in_memory.eer_percent, abs=1e-9)
    explicit = score_trials(
        CosineBackend(), ts, enrollment="per_utterance", aggregation="speaker_pair_mean",
        speaker_pair_method="explicit", normalization=norm, dtype=np.float64,
        gender_mode=gender_mode,  # type: ignore[arg-type]
    )  # fmt: skip
    moments = score_trials(
        CosineBackend(), ts, enrollment="per_utterance", aggregation="speaker_pair_mean",
        normalization=norm, dtype=np.float64, gender_mode=gender_mode,  # type: ignore[arg-type]
    )  # fmt: skip
    for key, m in moments.partitions.items():
        np.testing.assert_allclose(m.scores, explicit.partitions[key].scores, rtol=1e-9, atol=1e-9)


def test_as_norm_lowers_eer_when_speakers_have_score_offsets() -> None:
    """The case AS-norm exists for: trial-dependent score offsets (a 'hub' trial scores high
    against everyone) hurt a single threshold; normalization per trial removes them."""
    rng = np.random.default_rng(8)
    dim = 24
    pop = make_synthetic_speakers(20, dim, rng, 1.0, 0.5)
    e, e_spk, e_gen = pop.sample(2, rng)
    t, t_spk, t_gen = pop.sample(4, rng)
    common = rng.standard_normal(dim) * 3.0
    t = t + rng.uniform(0.0, 2.0, (t.shape[0], 1)) * common  # per-trial pull to one direction
    ts = TrialSet.from_arrays(t, t_spk, t_gen, e, e_spk, e_gen)
    co = make_synthetic_speakers(40, dim, rng, 1.0, 0.5, prefix="co")
    c, c_spk, c_gen = co.sample(3, rng)
    norm = ASNorm(EmbeddingSet(c, c_spk, c_gen), top_k=10)
    raw = eer_report(score_trials(CosineBackend(), ts)).eer_percent
    normed = eer_report(score_trials(CosineBackend(), ts, normalization=norm)).eer_percent
    assert normed < raw
