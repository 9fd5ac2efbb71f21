"""SRD on speaker embeddings, F0 and phone units (Chandra et al.; PROTOCOLS.md section 5)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from services.attacks.f0 import F0ExtractionStats, F0Params, f0_histograms, f0_tracks, pyin_track
from services.attacks.phone_units import kmeans, segment_histogram_embedding
from services.attacks.srd_representations import (
    SRDRepresentationsConfig,
    embedding_similarity,
    negative_euclidean_similarity,
    run_srd_representations,
    split_inputs_references,
    srd_report,
)
from services.audio import SAMPLE_RATE_HZ


def _tone(f0_hz: float, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE_HZ)) / SAMPLE_RATE_HZ
    # A few harmonics so that it looks like a voice to pYIN.
    x = sum(np.sin(2 * np.pi * k * f0_hz * t) / k for k in range(1, 5))
    return (0.3 * x).astype(np.float32)


# --- split -------------------------------------------------------------------------------------


def test_split_is_utterance_disjoint_with_one_reference_per_speaker() -> None:
    spk = np.repeat(["a", "b", "c", "d"], [2, 5, 10, 1])
    split = split_inputs_references(spk, reference_fraction=0.5, seed=3)
    assert split.speaker_ids.tolist() == ["a", "b", "c"]
    assert split.dropped_speakers == ("d",)
    assert np.intersect1d(split.input_rows, split.reference_rows).size == 0
    # Every kept utterance is used exactly once.
    used = np.sort(np.concatenate([split.input_rows, split.reference_rows]))
    assert used.tolist() == np.flatnonzero(spk != "d").tolist()
    # Reference sizes: round(n / 2) clipped to [1, n - 1]: a 1, b 2, c 5.
    assert np.bincount(split.reference_owner).tolist() == [1, 2, 5]
    # Columns point at the right speaker on both sides.
    assert (split.speaker_ids[split.input_reference] == spk[split.input_rows]).all()
    assert (split.speaker_ids[split.reference_owner] == spk[split.reference_rows]).all()


def test_split_is_seeded() -> None:
    spk = np.repeat([f"s{i}" for i in range(6)], 8)
    a = split_inputs_references(spk, seed=1)
    b = split_inputs_references(spk, seed=1)
    c = split_inputs_references(spk, seed=2)
    assert a.reference_rows.tolist() == b.reference_rows.tolist()
    assert a.reference_rows.tolist() != c.reference_rows.tolist()


def test_split_needs_two_speakers() -> None:
    with pytest.raises(ValueError, match="at least 2 speakers"):
        split_inputs_references(["a", "a", "b"])


# --- similarities ------------------------------------------------------------------------------


def test_negative_euclidean_matches_pairwise_distances() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random((7, 5)), rng.random((4, 5))
    brute = -np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    np.testing.assert_allclose(negative_euclidean_similarity(a, b), brute, atol=1e-9)


def test_srd_report_counts_ties_by_the_configured_rule() -> None:
    # Identical voices: every reference scores the same for every input.
    similarity, reference, speakers = np.ones((6, 6)), np.arange(6), np.arange(6).astype(str)
    assert SRDRepresentationsConfig().tie_rule == "expected"
    expected, _ = srd_report(similarity, reference, speakers, n_resamples=20)
    assert expected["tie_rule"] == "expected" and expected["n_tied_inputs"] == 6
    assert expected["rank_counts"] == pytest.approx([1.0] * 6)
    assert expected["empirical"]["identification_rate_percent"] == pytest.approx(100 / 6)
    assert expected["empirical"]["mean_disclosure_bits"] == pytest.approx(0.0, abs=1e-12)
    assert expected["mean_disclosure_ci95_bits"][1] == pytest.approx(0.0, abs=1e-12)
    cfg = SRDRepresentationsConfig(tie_rule="attacker")
    attacker, _ = srd_report(similarity, reference, speakers, tie_rule=cfg.tie_rule, n_resamples=0)
    assert attacker["empirical"]["identification_rate_percent"] == 100.0
    with pytest.raises(ValueError, match="tie_rule"):
        SRDRepresentationsConfig(tie_rule="best")  # type: ignore[arg-type]


def test_embedding_reference_is_the_mean_of_its_utterances() -> None:
    spk = np.array(["a", "a", "a", "a", "b", "b", "b", "b"])
    rng = np.random.default_rng(1)
    emb = rng.standard_normal((8, 6))
    split = split_inputs_references(spk, seed=0)
    sim = embedding_similarity(emb, split)
    for col in range(2):
        ref = emb[split.reference_rows[split.reference_owner == col]].mean(axis=0)
        x = emb[split.input_rows[0]]
        expected = x @ ref / np.linalg.norm(x) / np.linalg.norm(ref)
        assert sim[0, col] == pytest.approx(expected)


# --- F0 ----------------------------------------------------------------------------------------


def test_f0_grid_and_histogram_of_a_tone() -> None:
    params = F0Params()
    grid = params.grid_hz()
    assert grid[0] == pytest.approx(65.0) and grid[-1] <= 450.0
    assert grid.size == 101  # 1/3 semitone steps from 65 to 450 Hz
    track = pyin_track(_tone(200.0), params)
    voiced = track[np.isfinite(track)]
    assert voiced.size > 0.5 * track.size
    assert np.median(voiced) == pytest.approx(200.0, rel=0.02)
    hist, n_voiced = f0_histograms([[track], []], params)
    assert hist[0].sum() == pytest.approx(1.0) and n_voiced[0] == voiced.size
    assert hist[1].sum() == 0.0 and n_voiced[1] == 0
    peak_hz = grid[int(np.argmax(hist[0]))]
    assert abs(12 * np.log2(peak_hz / 200.0)) <= 0.5  # peak bin within half a semitone


def test_f0_cache_and_parallel_extraction_agree(tmp_path) -> None:  # type: ignore[no-untyped-def]
    waves = [_tone(f, 0.5) for f in (110.0, 180.0, 260.0)]
    waves.append(waves[0].copy())  # identical audio is analysed once
    first = F0ExtractionStats()
    parallel = f0_tracks(waves, cache_dir=tmp_path, workers=2, stats=first)
    assert first.extracted == 3 and first.cache_hits == 1
    again = F0ExtractionStats()
    cached = f0_tracks(waves, cache_dir=tmp_path, workers=2, stats=again)
    assert again.extracted == 0 and again.cache_hits == 4
    serial = f0_tracks(waves, workers=1)
    for p, c, s in zip(parallel, cached, serial, strict=True):
        np.testing.assert_array_equal(p, c)
        np.testing.assert_array_equal(p, s)
    assert len(list(tmp_path.rglob("*.npy"))) == 3


# --- phone units -------------------------------------------------------------------------------


def test_kmeans_recovers_separated_clusters_deterministically() -> None:
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    x = np.concatenate([c + 0.1 * rng.standard_normal((50, 2)) for c in centres])
    found = kmeans(x, 3, seed=4)
    distance = np.linalg.norm(centres[:, None, :] - found[None, :, :], axis=2)
    assert sorted(distance.argmin(axis=1).tolist()) == [0, 1, 2]  # one found centre each
    assert distance.min(axis=1).max() < 0.1
    np.testing.assert_array_equal(found, kmeans(x, 3, seed=4))


def test_segment_histograms_weigh_segments_equally() -> None:
    # 4 segments of 2 frames: (0,0) (0,1) (1,1) (2,2) -> mean of [1,0,0] [.5,.5,0] [0,1,0] [0,0,1]
    units = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    emb = segment_histogram_embedding(units, 3, n_segments=4)
    np.testing.assert_allclose(emb, [1.5 / 4, 1.5 / 4, 1 / 4])
    assert segment_histogram_embedding(np.zeros(0, dtype=np.int64), 3).tolist() == [0, 0, 0]


# --- the published behaviour on the synthetic corpus --------------------------------------------


@pytest.fixture(scope="module")
def corpus() -> dict[str, object]:
    from services.anonymizers.base import AnonymizationItem
    from services.anonymizers.registry import build_anonymizer
    from services.corpus.synthetic import sample_speakers, synthesize_utterance

    speakers = sample_speakers(14, seed=3)
    evaluation, train = speakers[:8], speakers[8:]
    waves, ids, genders = [], [], []
    for i, s in enumerate(evaluation):
        for u in range(6):
            waves.append(synthesize_utterance(s, np.random.default_rng([i, u]), duration_s=2.0))
            ids.append(s.speaker_id)
            genders.append(s.gender)
    train_waves = [
        synthesize_utterance(s, np.random.default_rng([99, i, u]), duration_s=2.0)
        for i, s in enumerate(train)
        for u in range(3)
    ]
    # No target: random mode, a new shift for every utterance (utterance-level anonymization).
    items = [
        AnonymizationItem(f"u{k}", w, SAMPLE_RATE_HZ, sid, g)
        for k, (w, sid, g) in enumerate(zip(waves, ids, genders, strict=True))
    ]
    anonymized = build_anonymizer("pitch").anonymize(items, seed=0)
    return {"original": waves, "anonymized": anonymized, "ids": ids, "train": train_waves}


def _mfcc_embedding(waves: list[np.ndarray]) -> np.ndarray:
    """A stand-in recognizer: mean and std of 20 MFCCs (no training needed)."""
    import librosa

    feats = [librosa.feature.mfcc(y=w, sr=SAMPLE_RATE_HZ, n_mfcc=20) for w in waves]
    return np.stack([np.concatenate([m.mean(axis=1), m.std(axis=1)]) for m in feats])


@pytest.mark.slow
def test_f0_disclosure_drops_after_pitch_anonymization(corpus, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = SRDRepresentationsConfig(bootstrap_resamples=100)
    results = {}
    for condition in ("original", "anonymized"):
        waves = corpus[condition]
        results[condition] = run_srd_representations(
            waves,
            corpus["ids"],
            attacker_train_waveforms=corpus["train"],
            embeddings={"mfcc_stats": _mfcc_embedding(waves)},
            cache_dir=tmp_path / "cache",
            out_dir=tmp_path / condition,
            config=cfg,
            seed=0,
        )
        json.dumps(results[condition])  # the result is JSON-able as it is
    orig = results["original"]["representations"]
    anon = results["anonymized"]["representations"]
    n_ref = orig["f0"]["n_references"]
    assert n_ref == 8
    # F0 identifies the synthetic speakers well in the original speech ...
    assert orig["f0"]["empirical"]["mean_disclosure_bits"] > 1.0
    # ... and pitch anonymization (a new random shift per utterance) removes most of it.
    assert (
        anon["f0"]["empirical"]["mean_disclosure_bits"]
        < 0.4 * orig["f0"]["empirical"]["mean_disclosure_bits"]
    )
    assert anon["f0"]["mean_disclosure_ci95_bits"][1] < orig["f0"]["mean_disclosure_ci95_bits"][0]
    # Speaker embeddings of original speech disclose far more than chance (0 bits; max log2 8).
    emb = orig["mfcc_stats"]["empirical"]
    assert emb["mean_disclosure_bits"] > 1.0
    assert emb["identification_rate_percent"] > 3 * 100.0 / n_ref
    assert orig["mfcc_stats"]["mean_disclosure_ci95_bits"][0] > 0.5
    # Every row has both fits, summaries and a plot (PNG + SVG).
    for name, row in orig.items():
        assert row["constrained_fit"] is not None and row["unconstrained_fit"] is not None
        assert sum(row["rank_counts"]) == pytest.approx(row["n_observations"], rel=1e-12)
        assert {p.rsplit(".", 1)[1] for p in row["plots"]} == {"png", "svg"}, name
        assert all((tmp_path / "original" / p).is_file() for p in row["plots"])
    # The phone-unit row exists and is a proper distribution over N ranks.
    assert len(orig["phone_units"]["empirical"]["pmf"]) == n_ref
    # Second run on the same audio: every F0 track comes from the cache.
    again = run_srd_representations(
        corpus["original"],
        corpus["ids"],
        cache_dir=tmp_path / "cache",
        config=SRDRepresentationsConfig(representations=["f0"], bootstrap_resamples=0),
        seed=0,
    )
    extraction = again["representations"]["f0"]["extraction"]
    assert extraction["extracted"] == 0 and extraction["cache_hits"] == extraction["n_utterances"]
    assert again["representations"]["f0"]["empirical"] == orig["f0"]["empirical"]
