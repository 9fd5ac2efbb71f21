"""Manifest reading/writing and row validation (services.corpus.loaders / validation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from services.corpus.loaders import load_manifest, read_manifest, write_manifest
from services.corpus.manifest import Manifest, Utterance
from services.corpus.validation import (
    MAX_LISTED_PROBLEMS,
    DurationFilter,
    normalize_gender,
    validate_manifest,
)
from services.errors import CorpusError

SR = 16_000


def _tone(path: Path, seconds: float, sr: int = SR) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * sr)) / sr
    sf.write(str(path), 0.1 * np.sin(2 * np.pi * 220 * t), sr)


def _corpus(tmp_path: Path, n_speakers: int = 3, n_utts: int = 2) -> Manifest:
    """Short WAVs under tmp_path/audio and a manifest rooted at tmp_path (relative paths)."""
    rows = []
    for s in range(n_speakers):
        for u in range(n_utts):
            rel = f"audio/spk{s}/spk{s}-{u}.wav"
            dur = 2.0 + 0.25 * u
            _tone(tmp_path / rel, dur)
            rows.append(
                Utterance(
                    utt_id=f"spk{s}-{u}",
                    speaker_id=f"spk{s}",
                    gender="f" if s % 2 == 0 else "m",
                    path=rel,
                    duration_s=dur,
                    text=f'hello, "world" {u}' if u == 0 else None,
                    chapter_id="7" if u == 1 else None,
                    original_sample_rate=SR,
                )
            )
    return Manifest(utterances=tuple(rows), root=str(tmp_path))


def _csv(path: Path, rows: list[str]) -> Path:
    path.write_text("utt_id,speaker_id,gender,path,duration_s\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_round_trip_keeps_every_field(tmp_path: Path, suffix: str) -> None:
    manifest = _corpus(tmp_path)
    out = tmp_path / f"manifest{suffix}"
    written = write_manifest(manifest, out)
    back = read_manifest(out)
    assert back.utterances == manifest.utterances == written.utterances
    assert back.content_hash() == manifest.content_hash()
    assert all(back.resolve(u).is_file() for u in back)


def test_write_elsewhere_rewrites_relative_paths(tmp_path: Path) -> None:
    manifest = _corpus(tmp_path)
    out = tmp_path / "sub" / "m.jsonl"
    write_manifest(manifest, out)
    back = read_manifest(out)
    assert [back.resolve(u) for u in back] == [manifest.resolve(u) for u in manifest]
    assert back.utterances[0].path.startswith("/")  # outside sub/: absolute


def test_relative_paths_resolve_against_manifest_folder(tmp_path: Path) -> None:
    _tone(tmp_path / "a.wav", 2.5)
    m = _csv(tmp_path / "m.csv", ["u1,s1,F,a.wav,2.5"])
    back = read_manifest(m)
    assert back.resolve(back.utterances[0]) == (tmp_path / "a.wav").resolve()
    assert back.utterances[0].gender == "f"


@pytest.mark.parametrize(
    ("raw", "norm"), [("F", "f"), ("female", "f"), (" MALE ", "m"), ("m", "m"), ("Female", "f")]
)
def test_gender_aliases(raw: str, norm: str) -> None:
    assert normalize_gender(raw) == norm


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ("u2,s1,x,a.wav,2.5", "unknown gender 'x'"),
        ("u2,s1,f,missing.wav,2.5", "audio file not found"),
        ("u2,s1,f,a.wav,-1", "bad duration_s '-1'"),
        ("u2,s1,f,a.wav,abc", "bad duration_s 'abc'"),
        ("u2,s1,f,a.wav,9.0", "differs from the audio header"),
        ("u1,s1,f,a.wav,2.5", "duplicate utt_id 'u1' (first at row 2)"),
        ("u2,s1,m,a.wav,2.5", "speaker 's1' has gender 'm' here but 'f' at row 2"),
        ("u2,s1,f,empty.wav,2.5", "empty audio"),
        ("u2,s1,f,junk.wav,2.5", "unreadable audio"),
        ("u2,,f,a.wav,2.5", "missing speaker_id"),
    ],
)
def test_each_problem_names_file_and_row(tmp_path: Path, row: str, needle: str) -> None:
    _tone(tmp_path / "a.wav", 2.5)
    sf.write(str(tmp_path / "empty.wav"), np.zeros(0), SR)
    (tmp_path / "junk.wav").write_bytes(b"not audio at all")
    m = _csv(tmp_path / "m.csv", ["u1,s1,f,a.wav,2.5", row])
    with pytest.raises(CorpusError) as err:
        read_manifest(m)
    msg = str(err.value)
    assert f"{m}:3: " in msg
    assert needle in msg
    assert "\n" not in msg


def test_jsonl_problems_name_line(tmp_path: Path) -> None:
    _tone(tmp_path / "a.wav", 2.5)
    good = {"utt_id": "u1", "speaker_id": "s", "gender": "m", "path": "a.wav", "duration_s": 2.5}
    m = tmp_path / "m.jsonl"
    m.write_text(json.dumps(good) + "\n\n{not json\n[1, 2]\n")
    with pytest.raises(CorpusError) as err:
        read_manifest(m)
    assert f"{m}:3: invalid JSON" in str(err.value)
    assert f"{m}:4: expected a JSON object" in str(err.value)
    assert "2 problems" in str(err.value)


def test_skip_invalid_reports_and_skips(tmp_path: Path) -> None:
    _tone(tmp_path / "a.wav", 2.5)
    _tone(tmp_path / "b.wav", 3.0)
    m = _csv(
        tmp_path / "m.csv",
        ["u1,s1,f,a.wav,2.5", "u2,s1,q,a.wav,2.5", "u3,s2,m,b.wav,3.0", "u4,s2,m,gone.wav,3"],
    )
    report = load_manifest(m, skip_invalid=True)
    assert [u.utt_id for u in report.manifest] == ["u1", "u3"]
    assert [(p.row, p.source) for p in report.problems] == [(3, str(m)), (5, str(m))]


def test_many_problems_listed_up_to_limit(tmp_path: Path) -> None:
    n = MAX_LISTED_PROBLEMS + 5
    m = _csv(tmp_path / "m.csv", [f"u{i},s,zz,a.wav,1" for i in range(n)])
    with pytest.raises(CorpusError) as err:
        read_manifest(m, check_audio=False)
    msg = str(err.value)
    assert msg.startswith(f"{n} problems")
    assert msg.endswith("... and 5 more")
    assert f"{m}:{MAX_LISTED_PROBLEMS + 1}:" in msg
    assert f"{m}:{MAX_LISTED_PROBLEMS + 2}:" not in msg


def test_missing_column_and_empty_manifest(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("utt_id,speaker_id,path,duration_s\nu1,s,a.wav,1\n")
    with pytest.raises(CorpusError, match=r"bad\.csv:1: missing column\(s\) gender"):
        read_manifest(bad)
    empty = _csv(tmp_path / "empty.csv", [])
    with pytest.raises(CorpusError, match="no utterances"):
        read_manifest(empty)
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(CorpusError, match="unknown manifest format"):
        read_manifest(tmp_path / "m.txt")
    with pytest.raises(CorpusError, match="manifest file not found"):
        read_manifest(tmp_path / "nope.csv")


def test_blank_duration_read_from_header(tmp_path: Path) -> None:
    _tone(tmp_path / "a.wav", 2.75)
    m = tmp_path / "m.csv"
    m.write_text("utt_id,speaker_id,gender,path\nu1,s1,m,a.wav\n")
    assert read_manifest(m).utterances[0].duration_s == pytest.approx(2.75)
    with pytest.raises(CorpusError, match="missing column"):
        read_manifest(m, check_audio=False)


def test_validate_in_memory_manifest(tmp_path: Path) -> None:
    manifest = _corpus(tmp_path)
    assert validate_manifest(manifest) == []
    (tmp_path / manifest.utterances[1].path).unlink()
    problems = validate_manifest(manifest, source="mem")
    assert [(p.source, p.row) for p in problems] == [("mem", 2)]


def test_duration_filter_is_inclusive_and_names_emptied_speakers() -> None:
    utts = [
        Utterance(utt_id=f"u{i}", speaker_id=s, gender="f", path="x.wav", duration_s=d)
        for i, (s, d) in enumerate([("a", 2.0), ("a", 25.0), ("a", 1.99), ("b", 25.01)])
    ]
    report = DurationFilter().apply(Manifest(utterances=tuple(utts)))
    assert [u.utt_id for u in report.manifest] == ["u0", "u1"]
    assert len(report.problems) == 1
    assert "speaker 'b' has no utterance left" in report.problems[0].message
    with pytest.raises(ValueError, match="max_s"):
        DurationFilter(min_s=5, max_s=3)


def test_all_problems_of_one_row_reported(tmp_path: Path) -> None:
    _tone(tmp_path / "a.wav", 2.5)
    m = _csv(tmp_path / "m.csv", ["u1,s1,f,a.wav,2.5", "u1,s1,robot,gone.wav,2.5"])
    report = load_manifest(m, skip_invalid=True)
    messages = [p.message for p in report.problems]
    assert [p.row for p in report.problems] == [3, 3]
    assert "unknown gender 'robot'" in messages[0]
    assert "audio file not found" in messages[1]
    m2 = _csv(tmp_path / "m2.csv", ["u1,s1,f,a.wav,2.5", "u1,s1,f,gone.wav,2.5"])
    messages = [p.message for p in load_manifest(m2, skip_invalid=True).problems]
    assert len(messages) == 2
    assert "duplicate utt_id" in messages[0]


def test_concat_keeps_each_manifests_files(tmp_path: Path) -> None:
    from services.corpus.manifest import Manifest, Utterance

    def one(root: Path, utt: str) -> Manifest:
        (root / "a.wav").parent.mkdir(parents=True, exist_ok=True)
        (root / "a.wav").write_bytes(b"x")
        u = Utterance(utt_id=utt, speaker_id="s", gender="f", path="a.wav", duration_s=1.0)
        return Manifest(utterances=(u,), root=str(root))

    both = Manifest.concat(one(tmp_path / "x", "u1"), one(tmp_path / "y", "u2"))
    assert [both.resolve(u) for u in both] == [tmp_path / "x" / "a.wav", tmp_path / "y" / "a.wav"]
