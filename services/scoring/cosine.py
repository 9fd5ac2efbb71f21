"""Cosine scoring back-end (PROTOCOLS.md section 4, Franzreb et al.).

Score of a trial utterance x against a model y: cos(x, y) = x.y / (|x| |y|), computed for all
pairs as a product of L2-normalized float32 matrices in row blocks. A ``speaker_mean`` enrollment
model is the float64 mean of the speaker's raw embeddings (normalized afterwards by the cosine).
"""

from __future__ import annotations

import numpy as np

from services.scoring.pairs import PairScoreTerms


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` scaled to unit L2 norm (float64); a zero row raises ``ValueError``."""
    x64 = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x64, axis=1)
    if (norms == 0).any():
        raise ValueError(
            f"zero-norm embedding at row(s) {np.flatnonzero(norms == 0)[:5].tolist()}: "
            "cosine is undefined"
        )
    return np.asarray(x64 / norms[:, None])


class CosineBackend:
    """Cosine similarity between trial and model embeddings (no training)."""

    name = "cosine"

    def prepare(self, embeddings: np.ndarray) -> np.ndarray:
        """Per-utterance vectors in scoring space: the raw embeddings as float64."""
        return np.asarray(embeddings, dtype=np.float64)

    def speaker_model(self, mean_vectors: np.ndarray) -> np.ndarray:
        """A speaker model from the mean of its prepared vectors: the mean itself."""
        return mean_vectors

    def score_terms(self, trial_vectors: np.ndarray, model_vectors: np.ndarray) -> PairScoreTerms:
        """cos(x, y) = x_hat . y_hat: the quadratic form with Q = 0, P = I/2, c = 0."""
        return PairScoreTerms(l2_normalize(trial_vectors), l2_normalize(model_vectors))


def cosine_score_matrix(trial_embeddings: np.ndarray, model_embeddings: np.ndarray) -> np.ndarray:
    """Dense (n_trial, n_model) cosine matrix (float64) of two small embedding arrays."""
    terms = CosineBackend().score_terms(
        np.asarray(trial_embeddings, np.float64), np.asarray(model_embeddings, np.float64)
    )
    return np.asarray(terms.left @ terms.right.T)
