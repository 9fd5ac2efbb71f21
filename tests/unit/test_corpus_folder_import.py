"""The plain-folder importer: audio files plus a speakers table (a maker's own recordings)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from cli.main import main
from services.corpus.importers import import_corpus
from services.errors import CorpusError

SR_HZ = 22_050


def _wav(path: Path, seconds: float, sr: int = SR_HZ) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * sr)) / sr
    sf.write(str(path), 0.1 * np.sin(2 * np.pi * 180 * t), sr)


def test_speaker_folders_with_sidecar_transcripts(tmp_path: Path) -> None:
    root = tmp_path / "mine"
    _wav(root / "alice" / "a1.wav", 2.5)
    _wav(root / "alice" / "day2" / "a2.wav", 3.0)
    _wav(root / "bob" / "b1.flac", 2.0)
    (root / "alice" / "a1.txt").write_text("hello   there\n")
    (root / "speakers.csv").write_text("Speaker,Gender,age\nalice,F,31\nbob,male,40\n")
    report = import_corpus("folder", root)
    rows = {u.utt_id: u for u in report.manifest}
    assert sorted(rows) == ["alice-a1", "alice-day2-a2", "bob-b1"]
    assert rows["alice-a1"].text == "hello there" and rows["bob-b1"].text is None
    assert rows["alice-day2-a2"].speaker_id == "alice" and rows["alice-a1"].gender == "f"
    assert rows["bob-b1"].gender == "m" and rows["bob-b1"].path == "bob/b1.flac"
    assert rows["alice-a1"].duration_s == pytest.approx(2.5, abs=1e-3)
    assert rows["alice-a1"].original_sample_rate == SR_HZ


def test_flat_files_with_transcript_table(tmp_path: Path) -> None:
    root = tmp_path / "flat"
    for name, seconds in (("s1_001", 2.2), ("s1_002", 2.4), ("s10-001", 2.6)):
        _wav(root / f"{name}.wav", seconds)
    (root / "speakers.csv").write_text("speaker_id,sex\ns1,f\ns10,m\n")
    (root / "transcripts.csv").write_text("file,text\ns1_001.wav,one\ns10-001,ten\n")
    rows = {u.utt_id: u for u in import_corpus("folder", root).manifest}
    assert {k: (u.speaker_id, u.text) for k, u in rows.items()} == {
        "s1_001": ("s1", "one"),
        "s1_002": ("s1", None),
        "s10-001": ("s10", "ten"),  # the longest speaker id that prefixes the name wins
    }


def test_problems_are_listed_or_skipped(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    _wav(root / "alice" / "a1.wav", 2.5)
    _wav(root / "carol" / "c1.wav", 2.5)  # not in the table
    _wav(root / "stray.wav", 2.5)  # flat, no speaker prefix
    (root / "alice" / "broken.wav").write_bytes(b"RIFF0000WAVEjunk")
    (root / "speakers.csv").write_text("speaker,gender\nalice,f\ndave,robot\n")
    with pytest.raises(CorpusError) as info:
        import_corpus("folder", root)
    msg = str(info.value)
    for part in ("carol", "stray.wav", "broken.wav", "unknown gender 'robot'"):
        assert part in msg
    report = import_corpus("folder", root, skip_invalid=True)
    assert [u.utt_id for u in report.manifest] == ["alice-a1"]
    assert len(report.problems) == 4


def test_missing_table_or_columns(tmp_path: Path) -> None:
    _wav(tmp_path / "x" / "s" / "a.wav", 2.5)
    with pytest.raises(CorpusError, match="no speakers table"):
        import_corpus("folder", tmp_path / "x")
    (tmp_path / "x" / "speakers.csv").write_text("name,age\ns,3\n")
    with pytest.raises(CorpusError, match="must name a speaker column"):
        import_corpus("folder", tmp_path / "x")


def test_cli_import_then_protocol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "mine"
    speakers = [f"spk{i}" for i in range(6)]
    for _i, spk in enumerate(speakers):
        for k in range(4):
            _wav(root / spk / f"take{k}.wav", 2.0 + 0.1 * k, sr=16_000)
    table = "speaker,gender\n" + "".join(f"{s},{'fm'[i % 2]}\n" for i, s in enumerate(speakers))
    (root / "speakers.csv").write_text(table)
    out = tmp_path / "manifest.jsonl"
    assert main(["corpus", "import", str(root), "--out", str(out), "--layout", "folder"]) == 0
    assert "24 utterances, 6 speakers (3 f, 3 m)" in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 24 and (out.parent / rows[0]["path"]).is_file()
    proto = tmp_path / "protocol.json"
    args = ["--attacker-speakers", "2", "--eval-speakers", "2", "--target-speakers", "2"]
    args += ["--enrollments", "2", "--trials", "2"]
    assert main(["corpus", "protocol", str(out), "--out", str(proto), *args]) == 0
