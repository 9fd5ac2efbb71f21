"""Pitch anonymization measurably hides synthetic speakers from a simple MFCC classifier."""

from __future__ import annotations

import librosa
import numpy as np
import pytest

from services.anonymizers.base import AnonymizationItem, TargetVoice
from services.anonymizers.pitch import PitchShiftAnonymizer
from services.anonymizers.target_selection import select_targets
from services.anonymizers.voice import estimate_voice_profile
from services.corpus.manifest import Utterance
from services.corpus.synthetic import sample_speakers, synthesize_utterance

N_SOURCES = 12
UTTS_PER_SPEAKER = 6
DURATION_S = 2.0


def mfcc_mean(wav: np.ndarray) -> np.ndarray:
    return librosa.feature.mfcc(y=wav, sr=16_000, n_mfcc=20)[1:].mean(axis=1)


def leave_one_out_centroid_accuracy(
    enrolled: np.ndarray, trials: np.ndarray, labels: np.ndarray
) -> float:
    """Cosine nearest-centroid accuracy of ``trials[i]`` against clean speaker centroids.

    Centroid of each speaker = mean of its normalized clean embeddings, leaving trial i's own clean
    embedding out (so trial i never matches itself).
    """
    mean = enrolled.mean(axis=0)

    def normalize(x: np.ndarray) -> np.ndarray:
        x = x - mean
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    e = normalize(enrolled)
    onehot = np.eye(labels.max() + 1)[labels]
    sums, counts = onehot.T @ e, onehot.sum(axis=0)
    # Per trial i and speaker k: centroid without utterance i.
    centroids = (sums[None] - onehot[:, :, None] * e[:, None, :]) / (
        counts[None, :, None] - onehot[:, :, None]
    )
    centroids = centroids / np.linalg.norm(centroids, axis=2, keepdims=True)
    scores = np.einsum("nd,nkd->nk", normalize(trials), centroids)
    return float(np.mean(scores.argmax(axis=1) == labels))


@pytest.mark.slow
def test_pitch_anonymization_hides_identity_from_an_mfcc_classifier() -> None:
    speakers = sample_speakers(N_SOURCES + 8, seed=0)
    sources, target_speakers = speakers[:N_SOURCES], speakers[N_SOURCES:]
    utts: list[Utterance] = []
    waves: dict[str, np.ndarray] = {}
    for i, s in enumerate(sources):
        rng = np.random.default_rng([0, 7, i])
        for j in range(UTTS_PER_SPEAKER):
            utt_id = f"{s.speaker_id}-{j}"
            waves[utt_id] = synthesize_utterance(s, rng, duration_s=DURATION_S)
            utts.append(
                Utterance(
                    utt_id=utt_id,
                    speaker_id=s.speaker_id,
                    gender=s.gender,
                    path=f"{utt_id}.wav",
                    duration_s=DURATION_S,
                )
            )
    voices = {}
    for i, s in enumerate(target_speakers):
        rng = np.random.default_rng([0, 8, i])
        recordings = [synthesize_utterance(s, rng, duration_s=DURATION_S) for _ in range(2)]
        voices[s.speaker_id] = TargetVoice(
            s.speaker_id, s.gender, estimate_voice_profile(recordings)
        )

    mapping = select_targets(utts, voices, strategy="same-gender", granularity="utterance", seed=0)
    items = [
        AnonymizationItem(
            u.utt_id, waves[u.utt_id], 16_000, u.speaker_id, u.gender, voices[mapping[u.utt_id]]
        )
        for u in utts
    ]
    anonymized = PitchShiftAnonymizer().anonymize(items, seed=0)

    speaker_ids = sorted({u.speaker_id for u in utts})
    labels = np.array([speaker_ids.index(u.speaker_id) for u in utts])
    clean = np.stack([mfcc_mean(waves[u.utt_id]) for u in utts])
    anon = np.stack([mfcc_mean(w) for w in anonymized])
    chance = 1.0 / N_SOURCES
    clean_acc = leave_one_out_centroid_accuracy(clean, clean, labels)
    anon_acc = leave_one_out_centroid_accuracy(clean, anon, labels)
    assert clean_acc >= 5 * chance, clean_acc
    assert anon_acc <= clean_acc - 0.15, (clean_acc, anon_acc)
