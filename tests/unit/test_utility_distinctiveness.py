"""Gain of voice distinctiveness GVD (VoicePrivacy 2020/2022) against its definition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.errors import InvalidInputError
from services.utility.distinctiveness import (
    diagonal_dominance,
    gain_of_voice_distinctiveness,
    voice_similarity_matrix,
)


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def clustered(n_speakers: int, per_speaker: int, spread: float, seed: int = 0):
    """Embeddings around one random centre per speaker, and the speaker labels."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_speakers, 16))
    labels = np.repeat(np.arange(n_speakers), per_speaker)
    emb = centres[labels] + spread * rng.standard_normal((labels.size, 16))
    return emb, [f"s{k}" for k in labels]


def reference_matrix(emb: np.ndarray, labels: list[str]) -> np.ndarray:
    """The eval plan's S(i, j), written as loops over utterance pairs (test reference only)."""
    names = sorted(set(labels))
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    out = np.zeros((len(names), len(names)))
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            scores = [
                float(unit[x] @ unit[y])
                for x in range(len(labels))
                for y in range(len(labels))
                if labels[x] == a and labels[y] == b and x != y
            ]
            out[i, j] = sigmoid(sum(scores) / len(scores))
    return out


def test_identical_embeddings_give_zero_gain() -> None:
    emb, spk = clustered(5, 4, 0.5)
    out = gain_of_voice_distinctiveness(emb, emb.copy(), spk)
    assert out["gvd_db"] == pytest.approx(0.0, abs=1e-9)
    assert out["ddiag_original"] == pytest.approx(out["ddiag_anonymized"])
    assert out["ddiag_original"] > 0.05
    assert out["n_speakers"] == 5 and out["n_utterances"] == 20


def test_one_voice_for_everyone_gives_strongly_negative_gain() -> None:
    emb, spk = clustered(6, 5, 0.5)
    rng = np.random.default_rng(1)
    one_voice = np.ones((30, 16)) + 1e-3 * rng.standard_normal((30, 16))
    out = gain_of_voice_distinctiveness(emb, one_voice, spk)
    assert out["gvd_db"] < -20.0
    # Exactly one vector for all: D_diag(M_aa) = 0, floored: large negative, finite.
    exact = gain_of_voice_distinctiveness(emb, np.ones((30, 16)), spk)
    assert exact["ddiag_anonymized"] == pytest.approx(0.0, abs=1e-12)
    assert -120.0 < exact["gvd_db"] < -50.0


def test_voices_blurred_by_anonymization_lose_distinctiveness() -> None:
    emb, spk = clustered(8, 4, 0.3, seed=2)
    blurred = emb + 1.5 * np.random.default_rng(3).standard_normal(emb.shape)
    assert gain_of_voice_distinctiveness(emb, blurred, spk)["gvd_db"] < -3.0
    # More distinct after "anonymization" (tighter clusters): positive gain.
    tighter, _ = clustered(8, 4, 0.05, seed=2)
    assert gain_of_voice_distinctiveness(emb, tighter, spk)["gvd_db"] > 0.0


def test_hand_computed_two_speakers() -> None:
    # Originals: speaker A along x, B along y. Same-speaker cos 1, different-speaker cos 0.
    orig = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    # Anonymized: each speaker has one x and one y utterance: same-speaker pairs cos 0,
    # different-speaker pairs cos 1, 0, 0, 1 (mean 0.5).
    anon = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    spk = ["A", "A", "B", "B"]
    d_oo = abs(sigmoid(1.0) - sigmoid(0.0))
    d_aa = abs(sigmoid(0.0) - sigmoid(0.5))
    out = gain_of_voice_distinctiveness(orig, anon, spk)
    assert out["ddiag_original"] == pytest.approx(d_oo, rel=1e-12)
    assert out["ddiag_anonymized"] == pytest.approx(d_aa, rel=1e-12)
    assert out["gvd_db"] == pytest.approx(10 * math.log10(d_aa / d_oo), rel=1e-12)
    assert out["gvd_db"] == pytest.approx(-2.7571, abs=1e-3)


def test_matrix_matches_pairwise_definition_with_unbalanced_speakers() -> None:
    rng = np.random.default_rng(4)
    labels = ["a"] * 2 + ["b"] * 5 + ["c"] * 3
    emb = rng.standard_normal((10, 6)) + np.repeat(rng.standard_normal((3, 6)), [2, 5, 3], 0)
    names, idx = np.unique(labels, return_inverse=True)
    fast = voice_similarity_matrix(emb, idx, names.size)
    np.testing.assert_allclose(fast, reference_matrix(emb, labels), rtol=1e-12)
    # D_diag straight from its definition.
    diag = np.mean(np.diag(fast))
    off = np.mean(fast[~np.eye(3, dtype=bool)])
    assert diagonal_dominance(fast) == pytest.approx(abs(diag - off), rel=1e-12)
    # A pseudo-LLR map changes the matrix as the definition says.
    scaled = voice_similarity_matrix(emb, idx, names.size, score_scale=4.0, score_offset=-1.0)
    logit = np.log(fast / (1 - fast))
    np.testing.assert_allclose(scaled, 1 / (1 + np.exp(-(4.0 * logit - 1.0))), rtol=1e-10)


def test_single_utterance_speakers_are_left_out() -> None:
    emb, spk = clustered(4, 3, 0.4)
    extra = np.random.default_rng(9).standard_normal((1, 16))
    both = np.vstack([emb, extra])
    out = gain_of_voice_distinctiveness(both, both, [*spk, "lonely"])
    assert out["n_speakers"] == 4 and out["n_speakers_dropped"] == 1
    assert out["n_utterances"] == 12
    assert out["ddiag_original"] == pytest.approx(
        gain_of_voice_distinctiveness(emb, emb, spk)["ddiag_original"]
    )


def test_bad_input_is_named() -> None:
    emb, spk = clustered(3, 2, 0.4)
    with pytest.raises(InvalidInputError, match="same recognizer"):
        gain_of_voice_distinctiveness(emb, emb[:, :8], spk)
    with pytest.raises(InvalidInputError, match="one speaker per utterance"):
        gain_of_voice_distinctiveness(emb, emb, spk[:-1])
    with pytest.raises(InvalidInputError, match="at least two speakers"):
        gain_of_voice_distinctiveness(emb[:2], emb[:2], spk[:2])
    zero = emb.copy()
    zero[1] = 0.0
    with pytest.raises(InvalidInputError, match="zero embedding"):
        gain_of_voice_distinctiveness(emb, zero, spk)
    with pytest.raises(InvalidInputError, match="score_scale"):
        gain_of_voice_distinctiveness(emb, emb, spk, score_scale=0.0)


def test_original_voices_not_distinct_gives_nan() -> None:
    _, spk = clustered(3, 2, 0.4)
    same = np.ones((6, 16))
    assert math.isnan(gain_of_voice_distinctiveness(same, same, spk)["gvd_db"])
