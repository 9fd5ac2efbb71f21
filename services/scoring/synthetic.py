"""Synthetic Gaussian speaker embeddings for tests and benchmarks.

x = m + y_s + e: speaker offsets y_s ~ N(0, B), residuals e ~ N(0, W), with random full-rank
between- and within-speaker covariances. Half the speakers are 'f', half 'm'; the genders get
different mean offsets so that gender is visible in the embeddings, as in real data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SyntheticSpeakers:
    """Generative model of synthetic embeddings (covariances B and W, gender means)."""

    between: np.ndarray
    within: np.ndarray
    gender_means: dict[str, np.ndarray]
    speaker_offsets: np.ndarray
    speaker_ids: np.ndarray
    speaker_genders: np.ndarray

    def sample(
        self, n_per_speaker: int, rng: np.random.Generator, dtype: type = np.float32
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(embeddings (S*n, d), speaker ids, genders) with ``n_per_speaker`` rows per speaker."""
        s, d = self.speaker_offsets.shape
        chol = np.linalg.cholesky(self.within)
        spk = np.repeat(np.arange(s), n_per_speaker)
        means = self.speaker_offsets + np.stack(
            [self.gender_means[g] for g in self.speaker_genders]
        )
        x = means[spk] + rng.standard_normal((spk.size, d)) @ chol.T
        return x.astype(dtype), self.speaker_ids[spk], self.speaker_genders[spk]


def _random_covariance(rng: np.random.Generator, dim: int, scale: float) -> np.ndarray:
    """A random SPD matrix with trace ~ dim * scale and a spread of eigenvalues."""
    q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    eig = scale * np.exp(rng.uniform(-1.0, 1.0, dim))
    return np.asarray((q * eig) @ q.T)


def make_synthetic_speakers(
    n_speakers: int,
    dim: int,
    rng: np.random.Generator,
    between_scale: float = 1.0,
    within_scale: float = 1.0,
    gender_shift: float = 1.0,
    prefix: str = "spk",
) -> SyntheticSpeakers:
    """Draw ``n_speakers`` speakers in ``dim`` dimensions (covariance scales are per dimension)."""
    between = _random_covariance(rng, dim, between_scale)
    within = _random_covariance(rng, dim, within_scale)
    offsets = rng.standard_normal((n_speakers, dim)) @ np.linalg.cholesky(between).T
    shift = rng.standard_normal(dim) * gender_shift
    genders = np.array(["f" if i % 2 == 0 else "m" for i in range(n_speakers)])
    ids = np.array([f"{prefix}{i:05d}" for i in range(n_speakers)])
    return SyntheticSpeakers(between, within, {"f": shift, "m": -shift}, offsets, ids, genders)
