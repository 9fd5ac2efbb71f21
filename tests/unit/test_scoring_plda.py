"""LDA + PLDA: EM behaviour, covariance recovery, closed-form LLR vs marginal likelihoods."""

from __future__ import annotations

import numpy as np
import pytest

from services.scoring import (
    PLDABackend,
    TrialSet,
    eer_report,
    fit_two_covariance,
    marginal_likelihood_llr,
    score_trials,
    train_lda,
    train_plda,
)
from services.scoring.synthetic import make_synthetic_speakers


def _two_cov_data(seed: int, n_spk: int, n_utt: int, dim: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    spk = make_synthetic_speakers(
        n_spk, dim, rng, between_scale=1.0, within_scale=0.5, gender_shift=0.0
    )
    x, ids, gen = spk.sample(n_utt, rng, dtype=np.float64)
    return spk, x, ids, gen


def test_em_increases_likelihood() -> None:
    _, x, ids, _ = _two_cov_data(0, 60, 5, 6)
    _, _, _, history = fit_two_covariance(x, ids, n_iter=8)
    diffs = np.diff(history)
    assert (diffs > -1e-6 * abs(history[0])).all()
    assert history[-1] > history[0]


def test_em_recovers_between_and_within_covariances() -> None:
    spk, x, ids, _ = _two_cov_data(1, 2000, 8, 4)
    _, between, within, _ = fit_two_covariance(x, ids, n_iter=20)
    rel_b = np.linalg.norm(between - spk.between) / np.linalg.norm(spk.between)
    rel_w = np.linalg.norm(within - spk.within) / np.linalg.norm(spk.within)
    assert rel_b < 0.1
    assert rel_w < 0.05


def test_lda_dimension_and_whitening() -> None:
    _, x, ids, _ = _two_cov_data(2, 12, 6, 20)
    lda = train_lda(x, ids, dim=200)
    assert lda.matrix.shape == (20, 11)  # min(200, n_classes - 1, d)
    lda5 = train_lda(x, ids, dim=5)
    assert lda5.matrix.shape == (20, 5)


@pytest.fixture(scope="module")
def plda_setup():  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    spk = make_synthetic_speakers(60, 24, rng, between_scale=1.0, within_scale=0.7)
    x, ids, _ = spk.sample(6, rng, dtype=np.float64)
    model = train_plda(x, ids, lda_dim=10, n_iter=6)
    eval_spk = make_synthetic_speakers(10, 24, np.random.default_rng(4), 1.0, 0.7, prefix="ev")
    e, e_ids, e_gen = eval_spk.sample(4, rng)
    t, t_ids, t_gen = eval_spk.sample(3, rng)
    ts = TrialSet.from_arrays(t, t_ids, t_gen, e, e_ids, e_gen)
    return model, ts


def test_plda_model_shapes_and_projection(plda_setup) -> None:  # type: ignore[no-untyped-def]
    model, ts = plda_setup
    assert model.dim == 10
    proj = model.project(ts.trials.embeddings)
    np.testing.assert_allclose(np.linalg.norm(proj, axis=1), np.sqrt(10), rtol=1e-12)
    v = model.basis
    np.testing.assert_allclose(v.T @ model.within @ v, np.eye(10), atol=1e-8)
    np.testing.assert_allclose(v.T @ model.between @ v, np.diag(model.psi), atol=1e-8)


def test_closed_form_llr_equals_marginal_likelihood_formula(plda_setup) -> None:  # type: ignore[no-untyped-def]
    model, ts = plda_setup
    x = model.project(ts.trials.embeddings)
    y = model.project(ts.enrollment.embeddings)
    i, j = np.meshgrid(np.arange(len(x)), np.arange(len(y)), indexing="ij")
    i, j = i.ravel(), j.ravel()
    ref = marginal_likelihood_llr(model, x[i], y[j], chunk_pairs=97)
    np.testing.assert_allclose(model.llr(x[i], y[j]), ref, rtol=1e-9, atol=1e-9)
    # Full-matrix form Q, P in the projected space gives the same numbers.
    q_full, p_full, c = model.quadratic_form()
    xc, yc = x[i] - model.mean, y[j] - model.mean
    quad = (
        np.einsum("nd,de,ne->n", xc, q_full, xc)
        + np.einsum("nd,de,ne->n", yc, q_full, yc)
        + 2 * np.einsum("nd,de,ne->n", xc, p_full, yc)
        + c
    )
    np.testing.assert_allclose(quad, ref, rtol=1e-9, atol=1e-9)
    # And the blocked all-pairs scorer (float64) reproduces the same matrix.
    m = score_trials(
        PLDABackend(model), ts, enrollment="per_utterance", dtype=np.float64
    ).partitions["all"]
    np.testing.assert_allclose(m.scores.ravel(), ref, rtol=1e-9, atol=1e-8)
    m32 = score_trials(PLDABackend(model), ts, enrollment="per_utterance").partitions["all"]
    np.testing.assert_allclose(m32.scores.ravel(), ref, atol=1e-3 * max(1.0, np.abs(ref).max()))


def test_plda_llr_is_symmetric_and_separates_speakers(plda_setup) -> None:  # type: ignore[no-untyped-def]
    model, ts = plda_setup
    x = model.project(ts.trials.embeddings)
    y = model.project(ts.enrollment.embeddings[: len(x)])
    np.testing.assert_allclose(model.llr(x, y), model.llr(y, x), rtol=1e-12)
    report = eer_report(score_trials(PLDABackend(model), ts))
    assert report.eer_percent < 25.0


def test_plda_rejects_wrong_dimension(plda_setup) -> None:  # type: ignore[no-untyped-def]
    model, _ = plda_setup
    with pytest.raises(ValueError, match="dimension mismatch"):
        PLDABackend(model).prepare(np.ones((3, 5)))


def test_plda_trains_when_lda_finds_no_within_speaker_variance() -> None:
    """More dimensions than utterances, with dead (always zero) units, as a barely trained
    recognizer's ReLU embeddings: LDA finds directions in which each speaker's utterances
    coincide, and without a floor on W the two-covariance fit raised LinAlgError (seen on a
    fine-tuned GE2E after one epoch of a 6-speaker corpus)."""
    rng = np.random.default_rng(0)
    speakers = np.repeat(np.arange(6), 7)
    centres = rng.standard_normal((6, 256))[speakers]
    x = np.maximum(centres + 0.5 * rng.standard_normal((42, 256)), 0)
    x[:, :52] = 0.0
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    model = train_plda(x.astype(np.float32), speakers)
    assert np.all(np.linalg.eigvalsh(model.within) > 0)
    projected = model.project(x)
    same = model.llr(projected[0:6], projected[1:7])  # speaker 0's utterances, paired
    different = model.llr(projected[0:6], projected[7:13])  # speaker 0 against speaker 1
    assert np.isfinite(same).all() and np.isfinite(different).all()
    assert same.min() > different.max()
