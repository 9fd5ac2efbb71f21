"""anonymize_manifest (files, manifest, no-op rerun), build_target_voices, `unmask anonymize`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from services.anonymizers.base import TargetVoice
from services.anonymizers.registry import build_anonymizer
from services.anonymizers.service import (
    MANIFEST_NAME,
    SIDECAR_NAME,
    anonymize_manifest,
    build_target_voices,
)
from services.anonymizers.target_selection import select_targets, targets_for_utterances
from services.audio import read_audio
from services.corpus.loaders import read_manifest
from services.corpus.manifest import Manifest
from services.corpus.protocol import build_protocol, save_protocol
from services.corpus.synthetic import generate_synthetic_corpus, sample_speakers


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    out = tmp_path_factory.mktemp("corpus")
    return generate_synthetic_corpus(
        out, n_speakers=12, utts_per_speaker=4, seed=0, min_duration_s=2.0, max_duration_s=2.5
    )


def _split(corpus: Manifest) -> tuple[Manifest, Manifest]:
    speakers = corpus.speakers()
    targets = set(speakers[-4:])
    source = corpus.subset(u.utt_id for u in corpus if u.speaker_id in set(speakers[:3]))
    pool = corpus.subset(u.utt_id for u in corpus if u.speaker_id in targets)
    return source, pool


def test_target_voices_estimate_each_target_speakers_profile(corpus: Manifest) -> None:
    _, pool = _split(corpus)
    voices = build_target_voices(pool, utterances_per_target=2)
    truth = {s.speaker_id: s for s in sample_speakers(12, seed=0)}
    assert set(voices) == set(pool.speakers())
    for target_id, voice in voices.items():
        assert voice.gender == truth[target_id].gender
        assert voice.profile is not None
        assert abs(12 * np.log2(voice.profile.median_f0_hz / truth[target_id].f0_hz)) < 1.0


def test_anonymize_manifest_writes_audio_manifest_and_is_a_no_op_on_rerun(
    corpus: Manifest, tmp_path: Path
) -> None:
    source, pool = _split(corpus)
    voices = build_target_voices(pool, utterances_per_target=1)
    mapping = select_targets(source, voices, strategy="same-gender", seed=0)
    targets = targets_for_utterances(mapping, voices)
    anonymizer = build_anonymizer("pitch", {})
    seen: list[tuple[int, int]] = []
    result = anonymize_manifest(
        source, anonymizer, targets, tmp_path, seed=0, progress=lambda d, t: seen.append((d, t))
    )
    assert seen[-1] == (len(source), len(source))

    on_disk = read_manifest(tmp_path / MANIFEST_NAME)
    assert [u.utt_id for u in on_disk] == [u.utt_id for u in source]
    for src, anon in zip(source, on_disk, strict=True):
        assert anon.speaker_id == src.speaker_id and anon.gender == src.gender
        assert anon.target_id == mapping[src.utt_id]
        wav, sr = read_audio(on_disk.resolve(anon))
        original, _ = read_audio(source.resolve(src))
        assert sr == 16_000 and len(wav) == len(original)
        assert anon.duration_s == pytest.approx(len(original) / 16_000)
    assert [u.utt_id for u in result] == [u.utt_id for u in on_disk]

    sidecar = json.loads((tmp_path / SIDECAR_NAME).read_text())
    assert set(sidecar["files"]) == {u.utt_id for u in source}
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}

    again = anonymize_manifest(source, anonymizer, targets, tmp_path, seed=0)
    assert again == result
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == stamps

    # A damaged output is redone, the others are kept.
    victim = tmp_path / sidecar["files"][source.utterances[0].utt_id]["path"]
    victim.write_bytes(b"garbage")
    anonymize_manifest(source, anonymizer, targets, tmp_path, seed=0)
    assert read_audio(victim)[0].size > 0
    untouched = tmp_path / sidecar["files"][source.utterances[1].utt_id]["path"]
    assert untouched.stat().st_mtime_ns == stamps[untouched]

    # A smaller selection into the same folder rewrites the manifest without recomputing audio.
    fewer = source.subset([u.utt_id for u in source][1:])
    anonymize_manifest(fewer, anonymizer, targets, tmp_path, seed=0)
    assert len(read_manifest(tmp_path / MANIFEST_NAME)) == len(source) - 1
    assert untouched.stat().st_mtime_ns == stamps[untouched]

    # Another seed or another config recomputes everything.
    anonymize_manifest(source, anonymizer, targets, tmp_path, seed=1)
    assert untouched.stat().st_mtime_ns != stamps[untouched]
    assert json.loads((tmp_path / SIDECAR_NAME).read_text())["seed"] == 1


def test_anonymize_manifest_without_targets_uses_the_random_mode(
    corpus: Manifest, tmp_path: Path
) -> None:
    source, _ = _split(corpus)
    small = source.subset([u.utt_id for u in source][:3])
    result = anonymize_manifest(small, build_anonymizer("mcadams", {}), None, tmp_path, seed=0)
    assert all(u.target_id is None for u in result)
    params = [
        r["parameter"] for r in json.loads((tmp_path / SIDECAR_NAME).read_text())["files"].values()
    ]
    assert len(set(params)) == 3 and all(0.75 <= p <= 0.9 for p in params)


def test_cli_anonymizes_a_protocol_and_reports_bad_input(
    corpus: Manifest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(corpus.root)
    protocol = build_protocol(
        corpus, manifest_path="manifest.jsonl", trials_per_speaker=2, enrollments_per_speaker=2
    )
    save_protocol(protocol, root / "protocol.json")
    out = tmp_path / "anon"
    args = ["anonymize", "--anonymizer", "vtln", "--param", "warp=power", "--param", "jitter=0"]
    code = main(
        [*args, "--protocol", str(root / "protocol.json"), "--out", str(out), "--set", "trial"]
    )
    assert code == 0
    trial = read_manifest(out / "trial" / MANIFEST_NAME)
    assert {u.utt_id for u in trial} == set(protocol.trial)
    assert {u.target_id for u in trial} <= set(protocol.target_pool)
    assert not (out / "enrollment").exists()
    assert "trial: 8 utterances" in capsys.readouterr().out

    bad = main(
        [
            "anonymize",
            "--anonymizer",
            "robot",
            "--protocol",
            str(root / "protocol.json"),
            "--out",
            str(out),
        ]
    )
    assert bad == 2
    assert "unknown anonymizer 'robot'" in capsys.readouterr().err
    bad_set = main(
        [*args, "--protocol", str(root / "protocol.json"), "--out", str(out), "--set", "train"]
    )
    assert bad_set == 2
    assert "--set must be one of" in capsys.readouterr().err


def test_target_voice_profile_change_invalidates_outputs(corpus: Manifest, tmp_path: Path) -> None:
    source, _ = _split(corpus)
    small = source.subset([u.utt_id for u in source][:2])
    from services.anonymizers.base import VoiceProfile

    t1 = {u.utt_id: TargetVoice("t", "f", VoiceProfile(200.0, 1.1)) for u in small}
    t2 = {u.utt_id: TargetVoice("t", "f", VoiceProfile(150.0, 1.1)) for u in small}
    anonymizer = build_anonymizer("pitch", {"jitter": "0"})
    anonymize_manifest(small, anonymizer, t1, tmp_path, seed=0)
    first = json.loads((tmp_path / SIDECAR_NAME).read_text())["files"]
    anonymize_manifest(small, anonymizer, t2, tmp_path, seed=0)
    second = json.loads((tmp_path / SIDECAR_NAME).read_text())["files"]
    for utt_id in first:
        assert second[utt_id]["parameter"] == pytest.approx(
            first[utt_id]["parameter"] - 12 * np.log2(200 / 150)
        )
