"""LDA + two-covariance PLDA back-end (PROTOCOLS.md section 4; Georgiou et al., VPC 2022).

Pipeline, all fitted on attacker-train embeddings with speaker labels:

1. centering: subtract the training mean of the raw embeddings;
2. LDA to k = min(200, n_classes - 1, d) dimensions (generalized eigenvectors of the
   between- and within-class scatter);
3. length normalization: each vector scaled to norm sqrt(k) (Kaldi's convention);
4. two-covariance PLDA trained by EM: x = m + y + e, speaker variable y ~ N(0, B), residual
   e ~ N(0, W), y shared by all utterances of a speaker.

Scoring. With T = B + W, the log-likelihood ratio of "same speaker" against "different speakers"

    llr(x, y) = log N([x; y]; [m; m], [[T, B], [B, T]]) - log N(x; m, T) - log N(y; m, T)

is a quadratic form llr = x'Qx + y'Qy + 2x'Py + c (x, y centered by m) with

    S = T - B T^-1 B,  Q = (T^-1 - S^-1) / 2,  P = T^-1 B S^-1 / 2,  c = (log|T| - log|S|) / 2.

In the basis V that diagonalizes both covariances (V'WV = I, V'BV = diag(psi)), per dimension:

    q = (1/(1+psi) - (1+psi)/(1+2psi)) / 2,  p = psi / (2 (1+2psi)),
    c = sum(2 log(1+psi) - log(1+2psi)) / 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from scipy.stats import multivariate_normal

from services.scoring.pairs import PairScoreTerms

DEFAULT_LDA_DIM = 200
_EIG_FLOOR = 1e-10
_WITHIN_RIDGE = 1e-6
"""The two-covariance fit's floor on the within-speaker covariance, a share of the mean total
variance per dimension."""


def _labels_to_index(labels: np.ndarray) -> tuple[np.ndarray, int]:
    _, inv = np.unique(np.asarray(labels).astype(str), return_inverse=True)
    return inv, int(inv.max()) + 1


def _class_stats(x: np.ndarray, idx: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(counts (S,), per-class sums (S, d)) in float64."""
    counts = np.bincount(idx, minlength=n_classes).astype(np.float64)
    order = np.argsort(idx, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts[:-1]).astype(np.int64)])
    sums = np.add.reduceat(x[order], starts, axis=0)
    return counts, sums


def _check_training_data(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"training embeddings must be a non-empty (n, d) array, got {x.shape}")
    if not np.isfinite(x).all():
        rows = np.flatnonzero(~np.isfinite(x).all(axis=1))
        raise ValueError(f"training embeddings contain NaN or inf at rows {rows[:5].tolist()}")
    if np.asarray(labels).shape != (x.shape[0],):
        raise ValueError(
            f"speaker labels have shape {np.asarray(labels).shape}, expected ({x.shape[0]},)"
        )
    idx, n_classes = _labels_to_index(labels)
    if n_classes < 2:
        raise ValueError("LDA/PLDA training needs at least 2 speakers")
    if n_classes == x.shape[0]:
        raise ValueError("PLDA training needs speakers with at least 2 utterances")
    return x, idx, n_classes


@dataclass(frozen=True)
class LDAProjection:
    """Centering and LDA: ``project(x) = (x - mean) @ matrix``, (d,) -> (k,)."""

    mean: np.ndarray
    matrix: np.ndarray

    def project(self, x: np.ndarray) -> np.ndarray:
        return np.asarray((np.asarray(x, dtype=np.float64) - self.mean) @ self.matrix)


def train_lda(
    embeddings: np.ndarray, speaker_ids: np.ndarray, dim: int = DEFAULT_LDA_DIM
) -> LDAProjection:
    """Fit centering + LDA to min(dim, n_speakers - 1, d) dimensions.

    Directions are the top generalized eigenvectors of (between-class scatter, within-class
    scatter), scaled so the projected within-class covariance is the identity.
    """
    x, idx, n_classes = _check_training_data(embeddings, speaker_ids)
    mean = x.mean(axis=0)
    xc = x - mean
    counts, sums = _class_stats(xc, idx, n_classes)
    class_means = sums / counts[:, None]
    between = (class_means * counts[:, None]).T @ class_means / x.shape[0]
    within = xc.T @ xc / x.shape[0] - between
    # A small ridge keeps the within-class scatter invertible when d is close to n.
    within += np.eye(within.shape[0]) * (1e-6 * np.trace(within) / within.shape[0])
    k = min(dim, n_classes - 1, x.shape[1])
    if k < 1:
        raise ValueError(f"LDA dimension must be >= 1, got {k}")
    evals, evecs = scipy.linalg.eigh(between, within)
    order = np.argsort(evals)[::-1][:k]
    return LDAProjection(mean=mean, matrix=np.ascontiguousarray(evecs[:, order]))


def length_normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to L2 norm sqrt(dim) (float64)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError("zero-norm vector cannot be length-normalized")
    return np.asarray(x * (np.sqrt(x.shape[1]) / norms))


def _joint_diagonalization(
    between: np.ndarray, within: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(V, psi) with V'WV = I and V'BV = diag(psi), psi >= 0."""
    psi, v = scipy.linalg.eigh(between, within)
    return v, np.maximum(psi, _EIG_FLOOR)


def two_covariance_log_likelihood(
    x: np.ndarray,
    speaker_ids: np.ndarray,
    mean: np.ndarray,
    between: np.ndarray,
    within: np.ndarray,
) -> float:
    """Total log marginal likelihood (nats) of the data under the two-covariance model.

    The utterances of a speaker are jointly Gaussian with covariance I (x) W + 11' (x) B; in the
    jointly diagonalizing basis this factorizes per dimension.
    """
    x = np.asarray(x, dtype=np.float64)
    idx, n_classes = _labels_to_index(speaker_ids)
    v, psi = _joint_diagonalization(between, within)
    z = (x - mean) @ v
    counts, sums = _class_stats(z, idx, n_classes)
    n_psi = counts[:, None] * psi[None, :]
    quad = (z**2).sum() - (psi[None, :] * sums**2 / (1.0 + n_psi)).sum()
    logdet = np.log1p(n_psi).sum()
    n, d = x.shape
    _, logdet_v = np.linalg.slogdet(v)
    return float(-0.5 * (n * d * np.log(2 * np.pi) + logdet + quad) + n * logdet_v)


def fit_two_covariance(
    x: np.ndarray, speaker_ids: np.ndarray, n_iter: int = 10
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[float]]:
    """EM for the two-covariance model. Returns (mean, B, W, log-likelihood per iteration).

    The mean is the data mean. The log-likelihood list holds the value before each EM step and
    after the last one (n_iter + 1 values, non-decreasing up to rounding).
    """
    x, idx, n_classes = _check_training_data(x, speaker_ids)
    if n_iter < 0:
        raise ValueError(f"n_iter must be >= 0, got {n_iter}")
    mean = x.mean(axis=0)
    xc = x - mean
    n, d = xc.shape
    counts, sums = _class_stats(xc, idx, n_classes)
    scatter = xc.T @ xc
    class_means = sums / counts[:, None]
    between = np.cov(class_means.T, bias=True).reshape(d, d)
    # A ridge of 1e-6 of the mean total variance keeps W positive definite when LDA found
    # directions with no within-speaker variance at all (more embedding dimensions than
    # training utterances, e.g. a barely trained recognizer with dead ReLU units): the joint
    # diagonalization needs W > 0.
    ridge = np.eye(d) * (_WITHIN_RIDGE * np.trace(scatter) / (n * d))
    within = (scatter - (class_means * counts[:, None]).T @ class_means) / n + ridge
    history = [two_covariance_log_likelihood(x, speaker_ids, mean, between, within)]
    for _ in range(n_iter):
        v, psi = _joint_diagonalization(between, within)
        v_inv = np.linalg.inv(v)
        # Posterior of each speaker variable in the diagonal basis: independent per dimension.
        post_var = 1.0 / (1.0 / psi[None, :] + counts[:, None])
        y_z = (sums @ v) * post_var
        y = y_z @ v_inv  # posterior means in the original basis, rows = speakers
        second = v_inv.T @ (y_z.T @ y_z + np.diag(post_var.sum(axis=0))) @ v_inv
        second_n = (
            v_inv.T
            @ ((y_z * counts[:, None]).T @ y_z + np.diag((post_var * counts[:, None]).sum(axis=0)))
            @ v_inv
        )
        cross = sums.T @ y
        between = second / n_classes
        within = (scatter - cross - cross.T + second_n) / n
        between = (between + between.T) / 2
        within = (within + within.T) / 2 + ridge
        history.append(two_covariance_log_likelihood(x, speaker_ids, mean, between, within))
    return mean, between, within, history


@dataclass(frozen=True)
class PLDAModel:
    """A trained LDA + two-covariance PLDA back-end (see the module docstring for formulas)."""

    lda: LDAProjection
    mean: np.ndarray
    between: np.ndarray
    within: np.ndarray
    log_likelihoods: tuple[float, ...] = ()
    basis: np.ndarray = field(init=False, repr=False)
    psi: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        v, psi = _joint_diagonalization(self.between, self.within)
        object.__setattr__(self, "basis", v)
        object.__setattr__(self, "psi", psi)

    @property
    def dim(self) -> int:
        """PLDA (LDA output) dimension k."""
        return int(self.mean.shape[0])

    def project(self, embeddings: np.ndarray) -> np.ndarray:
        """Raw embeddings (n, d) -> centered, LDA-projected, length-normalized vectors (n, k)."""
        return length_normalize(self.lda.project(embeddings))

    def latent(self, vectors: np.ndarray) -> np.ndarray:
        """Projected vectors -> the diagonal basis: u = V'(x - m)."""
        return np.asarray((np.asarray(vectors, np.float64) - self.mean) @ self.basis)

    def quadratic_coefficients(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(q, p, c): diagonal Q and P of the LLR in the latent basis, and the constant (nats)."""
        psi = self.psi
        q = 0.5 * (1.0 / (1.0 + psi) - (1.0 + psi) / (1.0 + 2.0 * psi))
        p = psi / (2.0 * (1.0 + 2.0 * psi))
        c = 0.5 * float(np.sum(2.0 * np.log1p(psi) - np.log1p(2.0 * psi)))
        return q, p, c

    def quadratic_form(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(Q, P, c) in the projected (LDA) space, for x and y centered by ``mean``."""
        q, p, c = self.quadratic_coefficients()
        v = self.basis
        return (v * q) @ v.T, (v * p) @ v.T, c

    def score_terms(self, trial_vectors: np.ndarray, model_vectors: np.ndarray) -> PairScoreTerms:
        """Operands of llr(i, j) = 2 (p*u_i) . v_j + (q . u_i^2 + c) + q . v_j^2."""
        q, p, c = self.quadratic_coefficients()
        u = self.latent(trial_vectors)
        v = self.latent(model_vectors)
        return PairScoreTerms(
            left=u * (2.0 * p),
            right=v,
            left_offset=(u**2) @ q + c,
            right_offset=(v**2) @ q,
        )

    def llr(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Closed-form LLR (nats) of paired rows x[i], y[i] (projected vectors, (n, k) each)."""
        q, p, c = self.quadratic_coefficients()
        u, v = self.latent(x), self.latent(y)
        return np.asarray((u**2) @ q + (v**2) @ q + 2.0 * (u * v) @ p + c)


def train_plda(
    embeddings: np.ndarray,
    speaker_ids: np.ndarray,
    lda_dim: int = DEFAULT_LDA_DIM,
    n_iter: int = 10,
) -> PLDAModel:
    """Train centering + LDA + length normalization + two-covariance PLDA (EM, ``n_iter`` steps)
    on attacker-train embeddings (n, d) with speaker labels (n,)."""
    lda = train_lda(embeddings, speaker_ids, lda_dim)
    projected = length_normalize(lda.project(embeddings))
    mean, between, within, history = fit_two_covariance(projected, speaker_ids, n_iter)
    return PLDAModel(lda, mean, between, within, tuple(history))


class PLDABackend:
    """Scoring back-end around a trained :class:`PLDAModel`.

    A ``speaker_mean`` enrollment model is the mean of the speaker's projected vectors,
    length-normalized again (Kaldi's averaged-ivector enrollment).
    """

    name = "plda"

    def __init__(self, model: PLDAModel) -> None:
        self.model = model

    def prepare(self, embeddings: np.ndarray) -> np.ndarray:
        if embeddings.shape[1] != self.model.lda.mean.shape[0]:
            raise ValueError(
                f"dimension mismatch: embeddings have d={embeddings.shape[1]}, the PLDA model "
                f"was trained on d={self.model.lda.mean.shape[0]}"
            )
        return self.model.project(embeddings)

    def speaker_model(self, mean_vectors: np.ndarray) -> np.ndarray:
        return length_normalize(mean_vectors)

    def score_terms(self, trial_vectors: np.ndarray, model_vectors: np.ndarray) -> PairScoreTerms:
        return self.model.score_terms(trial_vectors, model_vectors)


def marginal_likelihood_llr(
    model: PLDAModel, x: np.ndarray, y: np.ndarray, chunk_pairs: int = 5000
) -> np.ndarray:
    """Reference LLR of paired rows x[i], y[i] from the marginal likelihoods (nats).

    Evaluates log N([x; y]; [m; m], [[T, B], [B, T]]) - log N(x; m, T) - log N(y; m, T) with
    full covariances per pair, ``chunk_pairs`` pairs at a time, as per-pair toolkits do. Slow by
    design: it is the comparison baseline and the test oracle for :meth:`PLDAModel.llr`.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    total = model.between + model.within
    joint_cov = np.block([[total, model.between], [model.between, total]])
    joint_mean = np.concatenate([model.mean, model.mean])
    out = np.empty(x.shape[0])
    for start in range(0, x.shape[0], chunk_pairs):
        s = slice(start, start + chunk_pairs)
        same = multivariate_normal.logpdf(np.hstack([x[s], y[s]]), joint_mean, joint_cov)
        diff = multivariate_normal.logpdf(x[s], model.mean, total) + multivariate_normal.logpdf(
            y[s], model.mean, total
        )
        out[s] = same - diff
    return out
