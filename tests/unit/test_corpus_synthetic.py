"""The built-in synthetic corpus: manifest shape, determinism, identity carried, F0, re-runs."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import librosa
import numpy as np
import pytest
import soundfile as sf

from services.audio import SAMPLE_RATE_HZ
from services.corpus.loaders import read_manifest
from services.corpus.manifest import Manifest
from services.corpus.synthetic import (
    PEAK_DBFS,
    SyntheticSpeaker,
    generate_synthetic_corpus,
    sample_speakers,
    synthesize_utterance,
)
from services.errors import ConfigError, CorpusError

SMALL = {
    "n_speakers": 4,
    "utts_per_speaker": 3,
    "seed": 3,
    "min_duration_s": 1.0,
    "max_duration_s": 2.0,
}


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    out = tmp_path_factory.mktemp("syn") / "corpus"
    return out, generate_synthetic_corpus(out, **SMALL)


def _file_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_sample_speakers_balanced_ids_and_gender_ranges() -> None:
    speakers = sample_speakers(9, seed=5)
    assert [s.speaker_id for s in speakers] == [f"syn{i:04d}" for i in range(1, 10)]
    genders = [s.gender for s in speakers]
    assert genders.count("f") == 5 and genders.count("m") == 4
    assert genders != sorted(genders)  # shuffled, not blocks (for this seed)
    for s in speakers:
        lo, hi = (165.0, 255.0) if s.gender == "f" else (85.0, 150.0)
        assert lo <= s.f0_hz <= hi
        assert 0.85 <= s.formant_scale <= 1.2
    f_scale = np.mean([s.formant_scale for s in speakers if s.gender == "f"])
    m_scale = np.mean([s.formant_scale for s in speakers if s.gender == "m"])
    assert f_scale > m_scale  # shorter female vocal tracts
    assert sample_speakers(9, seed=5) == speakers
    assert sample_speakers(9, seed=6) != speakers


def test_corpus_manifest_shape(small_corpus: tuple[Path, Manifest]) -> None:
    out, manifest = small_corpus
    assert manifest.root == str(out)
    assert len(manifest) == 4 * 3
    assert manifest.speakers() == ["syn0001", "syn0002", "syn0003", "syn0004"]
    genders = list(manifest.speaker_gender().values())
    assert sorted(genders) == ["f", "f", "m", "m"]
    for spk, utts in manifest.by_speaker().items():
        assert [u.utt_id for u in utts] == [f"{spk}-{j:04d}" for j in range(3)]
    for u in manifest:
        assert u.path == f"wav/{u.speaker_id}/{u.utt_id}.wav"
        assert re.fullmatch(r"syn\d{4}-\d{4}", u.utt_id)
        assert 1.0 <= u.duration_s <= 2.0
        info = sf.info(str(manifest.resolve(u)))
        assert (info.samplerate, info.channels, info.subtype) == (SAMPLE_RATE_HZ, 1, "PCM_16")
        assert info.frames / info.samplerate == u.duration_s
    # The JSONL file on disk reads back (audio checked) as the same rows.
    again = read_manifest(out / "manifest.jsonl")
    assert again.utterances == manifest.utterances
    lines = (out / "manifest.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["speaker_id"] == "syn0001"
    voices = json.loads((out / "speakers.json").read_text())
    assert [v["speaker_id"] for v in voices] == manifest.speakers()


def test_corpus_is_deterministic(small_corpus: tuple[Path, Manifest], tmp_path: Path) -> None:
    out, _ = small_corpus
    generate_synthetic_corpus(tmp_path / "same", **SMALL)
    assert _file_bytes(tmp_path / "same") == _file_bytes(out)
    generate_synthetic_corpus(tmp_path / "other", **{**SMALL, "seed": 4})
    wavs_a = {k: v for k, v in _file_bytes(out).items() if k.endswith(".wav")}
    wavs_b = {k: v for k, v in _file_bytes(tmp_path / "other").items() if k.endswith(".wav")}
    assert wavs_a.keys() == wavs_b.keys()
    assert all(wavs_a[k] != wavs_b[k] for k in wavs_a)


def test_rerun_same_params_is_a_noop(small_corpus: tuple[Path, Manifest]) -> None:
    out, manifest = small_corpus
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = generate_synthetic_corpus(out, **SMALL)
    assert again == manifest
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == stamps


def test_other_params_into_existing_folder_is_refused(
    small_corpus: tuple[Path, Manifest], tmp_path: Path
) -> None:
    out, _ = small_corpus
    with pytest.raises(CorpusError, match=r"n_speakers=4 there, 5 asked"):
        generate_synthetic_corpus(out, **{**SMALL, "n_speakers": 5})
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(CorpusError, match="not empty"):
        generate_synthetic_corpus(foreign, **SMALL)


def test_interrupted_run_resumes_to_identical_files(
    small_corpus: tuple[Path, Manifest], tmp_path: Path
) -> None:
    out, _ = small_corpus
    partial = tmp_path / "partial"
    generate_synthetic_corpus(partial, **SMALL)
    (partial / "manifest.jsonl").unlink()
    (partial / "wav" / "syn0002" / "syn0002-0001.wav").unlink()
    generate_synthetic_corpus(partial, **SMALL)
    assert _file_bytes(partial) == _file_bytes(out)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_speakers": 0}, "n_speakers"),
        ({"utts_per_speaker": 0}, "utts_per_speaker"),
        ({"min_duration_s": 3.0, "max_duration_s": 2.0}, "min_duration_s"),
        ({"seed": -1}, "seed"),
    ],
)
def test_invalid_parameters_are_named(tmp_path: Path, kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        generate_synthetic_corpus(tmp_path / "c", **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "c").exists()


def test_synthesize_utterance_length_level_and_seeding() -> None:
    spk = sample_speakers(2, seed=0)[0]
    y = synthesize_utterance(spk, np.random.default_rng(1), duration_s=1.7)
    assert y.dtype == np.float32 and y.shape == (round(1.7 * SAMPLE_RATE_HZ),)
    assert np.all(np.isfinite(y))
    assert 20 * np.log10(np.max(np.abs(y))) == pytest.approx(PEAK_DBFS, abs=0.05)
    assert abs(float(np.mean(y))) < 1e-3
    np.testing.assert_array_equal(
        y, synthesize_utterance(spk, np.random.default_rng(1), duration_s=1.7)
    )
    other = synthesize_utterance(spk, np.random.default_rng(2), duration_s=1.7)
    assert not np.array_equal(y, other)
    drawn = synthesize_utterance(
        spk, np.random.default_rng(3), min_duration_s=2.0, max_duration_s=2.5
    )
    assert 2.0 * SAMPLE_RATE_HZ <= len(drawn) <= 2.5 * SAMPLE_RATE_HZ


def _mfcc_stats(y: np.ndarray) -> np.ndarray:
    m = librosa.feature.mfcc(y=y, sr=SAMPLE_RATE_HZ, n_mfcc=20, n_fft=512, hop_length=160)
    return np.concatenate([m.mean(axis=1), m.std(axis=1)])


def _nearest_speaker_accuracy(features: np.ndarray, labels: np.ndarray) -> float:
    """Leave-one-out top-1: cosine to each speaker's mean over its other utterances."""
    x = (features - features.mean(0)) / features.std(0)
    speakers = np.unique(labels)
    hits = 0
    for k in range(len(x)):
        others = np.arange(len(x)) != k
        means = np.stack([x[others & (labels == s)].mean(0) for s in speakers])
        sims = means @ x[k] / (np.linalg.norm(means, axis=1) * np.linalg.norm(x[k]))
        hits += int(speakers[np.argmax(sims)] == labels[k])
    return hits / len(x)


@pytest.mark.slow
def test_speaker_identity_is_carried_by_the_voice() -> None:
    n_speakers, n_utts = 12, 6
    feats, labels = [], []
    for i, spk in enumerate(sample_speakers(n_speakers, seed=11)):
        for j in range(n_utts):
            rng = np.random.default_rng([11, i, j])
            y = synthesize_utterance(spk, rng, min_duration_s=3.0, max_duration_s=4.0)
            feats.append(_mfcc_stats(y))
            labels.append(i)
    accuracy = _nearest_speaker_accuracy(np.array(feats), np.array(labels))
    assert accuracy >= 0.8, f"top-1 {accuracy:.2f} (chance {1 / n_speakers:.2f})"


def _median_f0(y: np.ndarray) -> float:
    f0, voiced, _ = librosa.pyin(y, fmin=60.0, fmax=400.0, sr=SAMPLE_RATE_HZ, frame_length=1024)
    return float(np.nanmedian(f0[voiced]))


def test_measured_f0_matches_the_speaker_level() -> None:
    # Per-utterance F0 offsets are N(0, 0.5) semitones: 2 semitones is four standard deviations.
    speakers = sample_speakers(4, seed=2)
    measured: dict[str, list[float]] = {"f": [], "m": []}
    for i, spk in enumerate(speakers):
        f0 = _median_f0(synthesize_utterance(spk, np.random.default_rng(i), duration_s=2.0))
        assert abs(12 * np.log2(f0 / spk.f0_hz)) < 2.0, (spk.speaker_id, spk.f0_hz, f0)
        measured[spk.gender].append(f0)
    assert max(measured["m"]) < min(measured["f"])


def _voiced_spectral_centroid(spk: SyntheticSpeaker) -> float:
    y = synthesize_utterance(spk, np.random.default_rng(7), duration_s=2.0)
    power = np.abs(librosa.stft(y, n_fft=1024, hop_length=256)) ** 2
    freqs = librosa.fft_frequencies(sr=SAMPLE_RATE_HZ, n_fft=1024)
    band = (freqs > 200) & (freqs < 5000)
    ltas = power[band].sum(axis=1)
    return float((freqs[band] * ltas).sum() / ltas.sum())


def test_vocal_tract_length_factor_shifts_the_spectrum_up() -> None:
    # Same rng seed, same rate: identical content, only the formant scale differs.
    spk = sample_speakers(1, seed=0)[0]
    low = _voiced_spectral_centroid(dataclasses.replace(spk, formant_scale=0.9))
    high = _voiced_spectral_centroid(dataclasses.replace(spk, formant_scale=1.15))
    assert high / low > 1.08


def test_manifest_text_is_the_unit_sequence(small_corpus: tuple[Path, Manifest]) -> None:
    from services.corpus.synthetic import UNIT_CLASSES, UNIT_TOKENS, utterance_units

    _, manifest = small_corpus
    speakers = sample_speakers(SMALL["n_speakers"], seed=SMALL["seed"])  # type: ignore[arg-type]
    assert sorted(set(UNIT_TOKENS.values()), key=lambda t: int(t[1:])) == [
        f"u{k}" for k in range(len(UNIT_CLASSES))
    ]
    for i, spk in enumerate(speakers):
        for j, utt in enumerate(manifest.by_speaker()[spk.speaker_id]):
            assert utt.text is not None and re.fullmatch(r"u\d+( u\d+)*", utt.text)
            rng = np.random.default_rng([SMALL["seed"], 2, i, j])
            lo, hi = SMALL["min_duration_s"], SMALL["max_duration_s"]
            units = utterance_units(spk, rng, min_duration_s=lo, max_duration_s=hi)
            assert utt.text == " ".join(units)
            # A phone lasts >= 40 ms: no more tokens than 25 per second.
            assert 0 < len(units) <= 25 * utt.duration_s
    # Utterances say different things.
    assert len({u.text for u in manifest}) == len(manifest)


def test_transcripts_follow_the_phones_and_leave_the_audio_alone() -> None:
    from services.corpus.synthetic import UNIT_TOKENS, utterance_units

    spk = sample_speakers(2, seed=0)
    # Same rng state: the same content spoken by two voices has the same transcript.
    a = utterance_units(spk[0], np.random.default_rng(11), duration_s=3.0)
    b = utterance_units(spk[1], np.random.default_rng(11), duration_s=3.0)
    assert a == b and len(a) > 5
    assert utterance_units(spk[0], np.random.default_rng(12), duration_s=3.0) != a
    # Drawing the transcript first changes nothing in the audio of the same rng state.
    wav1 = synthesize_utterance(spk[0], np.random.default_rng(11), duration_s=3.0)
    utterance_units(spk[0], np.random.default_rng(11), duration_s=3.0)
    wav2 = synthesize_utterance(spk[0], np.random.default_rng(11), duration_s=3.0)
    assert np.array_equal(wav1, wav2)
    # Nasals /m/ and /n/ share one token (identical murmurs), and so do the two pairs of vowels
    # whose formants differ by no more than two speakers' do; the other phones have their own.
    assert UNIT_TOKENS["m"] == UNIT_TOKENS["n"]
    assert UNIT_TOKENS["I"] == UNIT_TOKENS["e"] and UNIT_TOKENS["E"] == UNIT_TOKENS["ae"]
    vowels = [UNIT_TOKENS[v] for v in ("i", "I", "E", "a", "O", "o", "U", "u")]
    consonants = [UNIT_TOKENS[c] for c in ("s", "S", "f", "h", "p", "t", "k", "b", "d", "g", "m")]
    assert len(set(vowels + consonants)) == len(vowels + consonants) == 19


def test_a_corpus_written_without_text_gets_it_on_rerun(tmp_path: Path) -> None:
    args = {**SMALL, "n_speakers": 2, "utts_per_speaker": 2}
    out = tmp_path / "old"
    manifest = generate_synthetic_corpus(out, **args)  # type: ignore[arg-type]
    wavs = {k: v for k, v in _file_bytes(out).items() if k.endswith(".wav")}
    from services.corpus.loaders import write_manifest

    bare = manifest.with_utterances(u.model_copy(update={"text": None}) for u in manifest)
    write_manifest(bare, out / "manifest.jsonl")
    again = generate_synthetic_corpus(out, **args)  # type: ignore[arg-type]
    assert again.utterances == manifest.utterances
    assert read_manifest(out / "manifest.jsonl").utterances == manifest.utterances
    assert {k: v for k, v in _file_bytes(out).items() if k.endswith(".wav")} == wavs


def test_progress_counts_every_utterance(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    generate_synthetic_corpus(
        tmp_path / "c",
        n_speakers=2,
        utts_per_speaker=3,
        min_duration_s=0.3,
        max_duration_s=0.4,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(i, 6) for i in range(1, 7)]
