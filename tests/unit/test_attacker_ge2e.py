"""The pretrained GE2E verifier (Resemblyzer's wheel): offline, deterministic, discriminative."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from services.attacker import ge2e
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from services.metrics import compute_eer

pytest.importorskip("resemblyzer", reason="resemblyzer is a dependency (pyproject.toml)")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any socket the code under test opens fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    ge2e._encoder.cache_clear()  # load the weights under the guard
    ge2e.model_key.cache_clear()


def _corpus(n_speakers: int = 6, per_speaker: int = 3) -> tuple[list[np.ndarray], np.ndarray]:
    speakers = sample_speakers(n_speakers, seed=3)
    waves, labels = [], []
    for i, speaker in enumerate(speakers):
        for u in range(per_speaker):
            rng = np.random.default_rng([3, i, u])
            waves.append(synthesize_utterance(speaker, rng, duration_s=2.5))
            labels.append(i)
    return waves, np.array(labels)


def test_ge2e_is_offline_deterministic_and_tells_synthetic_speakers_apart(no_network: None) -> None:
    waves, labels = _corpus()
    emb = ge2e.ge2e_embeddings(waves)
    assert emb.shape == (len(waves), ge2e.EMBEDDING_DIM) and emb.dtype == np.float32
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    # The same audio gives the same embedding, alone or in another batch.
    np.testing.assert_array_equal(ge2e.ge2e_embeddings(waves[3:5]), emb[3:5])
    scores = emb @ emb.T
    same = labels[:, None] == labels[None, :]
    upper = np.triu(np.ones_like(same), k=1).astype(bool)
    eer = compute_eer(scores[same & upper], scores[~same & upper]).eer_percent
    # Never trained on this corpus, yet far from chance (50 %) on its voices.
    assert eer < 20.0, eer
    assert scores[same & upper].mean() > scores[~same & upper].mean() + 0.05
    assert ge2e.model_key().startswith("pretrained:ge2e:resemblyzer==")


def test_bad_waveforms_are_named() -> None:
    with pytest.raises(ValueError, match="waveform 1"):
        ge2e.ge2e_embeddings([np.zeros(16000, np.float32), np.array([np.nan], np.float32)])
