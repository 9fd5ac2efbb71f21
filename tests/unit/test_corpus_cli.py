"""`unmask corpus ...` commands through cli.main.main (exit codes, one-line errors)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from cli.main import main


def _tone(path: Path, seconds: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), 0.1 * np.sin(np.arange(int(seconds * 16_000)) / 10), 16_000)


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("unmask: ")
    return lines[0]


def test_bad_manifest_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tone(tmp_path / "a.wav", 2.5)
    m = tmp_path / "m.csv"
    m.write_text(
        "utt_id,speaker_id,gender,path,duration_s\nu1,s1,f,a.wav,2.5\nu2,s1,robot,b.wav,x\n"
    )
    assert main(["corpus", "validate", str(m)]) == 2
    line = _one_error_line(capsys)
    assert f"{m}:3:" in line
    assert "unknown gender 'robot'" in line
    assert "bad duration_s 'x'" in line


def test_import_skip_invalid_and_protocol(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = ["utt_id,speaker_id,gender,path,duration_s"]
    for s in range(6):
        for u in range(4):
            _tone(tmp_path / f"w/{s}_{u}.wav", 2.0 + 0.5 * u)
            rows.append(f"s{s}u{u},s{s},{'F' if s % 2 else 'Male'},w/{s}_{u}.wav,{2.0 + 0.5 * u}")
    rows.append("bad,s0,m,w/none.wav,3")
    src = tmp_path / "src.csv"
    src.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out" / "manifest.jsonl"
    args = ["corpus", "import", "--layout", "csv", str(src), "--out", str(out)]
    assert main(args) == 2
    assert "w/none.wav: audio file not found" in _one_error_line(capsys)
    assert main([*args, "--skip-invalid", "--max-duration", "3.0"]) == 0
    text = capsys.readouterr().out
    assert "skipped 1 problem" in text
    assert "18 utterances, 6 speakers (3 f, 3 m)" in text
    proto = tmp_path / "protocol.json"
    cmd = [
        "corpus",
        "protocol",
        str(out),
        "--out",
        str(proto),
        "--eval-speakers",
        "2",
        "--target-speakers",
        "2",
        "--trials",
        "1",
        "--enrollments",
        "1",
        "--tsa-strategy",
        "same-gender",
    ]
    assert main(cmd) == 0
    data = json.loads(proto.read_text())
    assert data["manifest_path"] == "out/manifest.jsonl"
    assert data["target_selection"]["strategy"] == "same-gender"
    assert len(data["speaker_roles"]["attacker_train"]) == 2
    assert main(["corpus", "validate", str(proto)]) == 0
    data["enrollment"] = []
    proto.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["corpus", "validate", str(proto)]) == 2
    assert "content hash mismatch" in _one_error_line(capsys)
    assert main([*cmd, "--tsa-strategy", "nearest"]) == 2
    assert "--tsa-strategy" in _one_error_line(capsys)


def test_synth_then_protocol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "syn"
    assert main(["corpus", "synth", "--out", str(out), "--speakers", "6", "--utterances", "4"]) == 0
    assert "24 utterances, 6 speakers" in capsys.readouterr().out
    manifest = out / "manifest.jsonl"
    assert main(["corpus", "validate", str(manifest)]) == 0
    proto = tmp_path / "p.json"
    assert (
        main(
            [
                "corpus",
                "protocol",
                str(manifest),
                "--out",
                str(proto),
                "--trials",
                "2",
                "--enrollments",
                "2",
            ]
        )
        == 0
    )
    assert "2 evaluation / 1 target" in capsys.readouterr().out
