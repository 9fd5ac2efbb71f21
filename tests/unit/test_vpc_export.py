"""`unmask export --format vpc`: the VoicePrivacy 2024 toolkit's files, file for file, in the
shapes its writers give them (``evaluate_asv.py`` / ``evaluate_asr.py``: a pandas CSV with an
index column; ``run_evaluation.py``'s summaries: pandas ``to_string`` tables; ``02_run.sh``'s
``result_for_rank``: the two summaries with an empty line between)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cli.main import main
from services.errors import InvalidInputError
from services.pipeline.config import parse_config
from services.pipeline.report import anonymizer_record
from services.pipeline.vpc_export import export_vpc, to_text

LISTS = {
    "libri_dev_trials_f": ("libri_dev", "f"),
    "libri_dev_trials_m": ("libri_dev", "m"),
    "libri_test_trials_f": ("libri_test", "f"),
    "libri_test_trials_m": ("libri_test", "m"),
}
SCENARIO_BASE = {"original": 2.0, "ignorant": 40.0, "lazy-informed": 30.0, "semi-informed": 20.0}


def _eer(scenario: str, name: str, seed: int, attacker: str, backend: str) -> float:
    """Distinct per cell, so a mix-up shows: list index, seed, attacker and back-end offsets."""
    index = list(LISTS).index(name)
    return (
        SCENARIO_BASE[scenario]
        + index
        + 0.5 * seed
        + (0.25 if attacker == "vpc2026" else 0)
        + (3 if backend == "plda" else 0)
    )


def _result(tmp_path: Path, *, attackers: tuple[str, ...] = ("vpc2024", "vpc2026")) -> Path:
    rows: list[dict[str, Any]] = []
    for attacker in attackers:
        for backend in ("cosine", "plda"):
            for scenario in SCENARIO_BASE:
                for seed in (0, 1):
                    lists = {
                        name: {
                            "dataset": dataset,
                            "gender": gender,
                            "eer_percent": _eer(scenario, name, seed, attacker, backend),
                        }
                        for name, (dataset, gender) in LISTS.items()
                    }
                    rows.append(
                        {
                            "scenario": scenario,
                            "backend": backend,
                            "seed": seed,
                            "attacker": attacker,
                            "trial_lists": lists,
                        }
                    )
    doc = {
        "name": "my-anon-vpc",
        "created_at": "2026-11-28T06:40:00+00:00",
        "protocol": {"name": "vpc", "hash": "x"},
        "anonymizer": {"kind": "archive", "name": "Team X B5", "vpc_suffix": "_b1"},
        "rows": rows,
        "utility": {"wer": {"wer_original_percent": 4.25, "wer_anonymized_percent": 9.5}},
        "provenance": {"seeds": [0, 1], "packages": {"unmask": "0.1"}},
    }
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(doc))
    return folder


def _csv(path: Path) -> list[dict[str, str]]:
    """As ``pandas.read_csv(path, index_col=0)`` sees it: an unnamed index column, then fields."""
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames is not None and reader.fieldnames[0] == ""
        rows = list(reader)
    assert [r[""] for r in rows] == [str(i) for i in range(len(rows))]
    return rows


def _summary_table(text: str, title: str) -> list[list[str]]:
    """The table under ``---- <title> ----`` split on whitespace (header, then rows)."""
    lines = text.splitlines()
    start = lines.index(f"---- {title} ----") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return [line.split() for line in lines[start:end]]


def test_export_writes_the_toolkit_files_and_nothing_else(tmp_path: Path) -> None:
    out = tmp_path / "vpc"
    written = export_vpc(_result(tmp_path), out)
    assert {p.relative_to(out).as_posix() for p in written} == {
        "exp/asv_orig/results_b1.csv",
        "exp/asv_anon_b1/results_b1.csv",
        "exp/asr/results_b1.csv",
        "exp/results_summary/eval_orig_b1/results_orig.txt",
        "exp/results_summary/eval_orig_b1/config.yaml",
        "exp/results_summary/eval_anon_b1/results_anon.txt",
        "exp/results_summary/eval_anon_b1/config.yaml",
        "exp/results_summary/result_for_rank_b1",
        "UNMASK.md",
    }
    assert {p for p in out.rglob("*") if p.is_file()} == set(written)

    # ASV_eval (original-speech model): OO, OA, AA per list, in the toolkit's order; the
    # (dataset, split, gender, enrollment, trial) key is unique; vpc2024, cosine, seed mean.
    orig = _csv(out / "exp/asv_orig/results_b1.csv")
    assert list(orig[0]) == ["", "dataset", "split", "gender", "enrollment", "trial", "EER"]
    keys = [(r["dataset"], r["split"], r["gender"], r["enrollment"], r["trial"]) for r in orig]
    assert len(keys) == len(set(keys)) == 12
    assert keys[:3] == [
        ("libri", "dev", "f", "original", "original"),
        ("libri", "dev", "f", "original", "anon"),
        ("libri", "dev", "f", "anon", "anon"),
    ]
    assert float(orig[1]["EER"]) == pytest.approx(40.25)  # ignorant, list 0, seeds 0 and 1
    assert float(orig[5]["EER"]) == pytest.approx(31.25)  # lazy-informed, list 1
    anon = _csv(out / "exp/asv_anon_b1/results_b1.csv")
    assert [(r["gender"], r["enrollment"], r["trial"], r["EER"]) for r in anon] == [
        ("f", "anon", "anon", "20.25"),
        ("m", "anon", "anon", "21.25"),
        ("f", "anon", "anon", "22.25"),
        ("m", "anon", "anon", "23.25"),
    ]
    asr = _csv(out / "exp/asr/results_b1.csv")
    assert [(r["dataset"], r["split"], r["asr"], r["WER"]) for r in asr] == [
        ("libri", "dev+test", "original", "4.25"),
        ("libri", "dev+test", "anon", "9.5"),
    ]

    # The summaries: the OO rows of ASV_eval (their CSV index labels kept) and the ASR rows;
    # the AA rows of ASV_eval^anon; result_for_rank = both with an empty line between.
    summary = out / "exp/results_summary"
    orig_text = (summary / "eval_orig_b1/results_orig.txt").read_text()
    anon_text = (summary / "eval_anon_b1/results_anon.txt").read_text()
    assert orig_text.startswith("---- Time: 28-11-26_06:40 ----\n\n---- ASV_eval results ----\n")
    table = _summary_table(orig_text, "ASV_eval results")
    assert table[0] == ["dataset", "split", "gender", "enrollment", "trial", "EER"]
    assert table[1:] == [
        ["0", "libri", "dev", "f", "original", "original", "2.25"],
        ["3", "libri", "dev", "m", "original", "original", "3.25"],
        ["6", "libri", "test", "f", "original", "original", "4.25"],
        ["9", "libri", "test", "m", "original", "original", "5.25"],
    ]
    assert _summary_table(orig_text, "ASR results")[1:] == [
        ["0", "libri", "dev+test", "original", "4.25"],
        ["1", "libri", "dev+test", "anon", "9.50"],
    ]
    anon_table = _summary_table(anon_text, "ASV_eval^anon results")
    assert [row[0] for row in anon_table[1:]] == ["0", "1", "2", "3"]
    assert (summary / "result_for_rank_b1").read_text() == orig_text + "\n" + anon_text
    note = (out / "UNMASK.md").read_text()
    assert "Team X B5" in note and "`_b1` (detected in the archive)" in note
    assert "Attacker: vpc2024; back-end cosine" in note


def test_pandas_to_string_shape() -> None:
    rows = [(0, {"dataset": "libri", "EER": 12.345}), (3, {"dataset": "vctk", "EER": 5.0})]
    assert to_text(("dataset", "EER"), rows) == (
        "  dataset     EER\n0   libri  12.345\n3    vctk   5.000"
    )


def test_suffix_attacker_and_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _result(tmp_path)
    written = export_vpc(run, tmp_path / "given", suffix="_mine", attacker="vpc2026")
    names = {p.name for p in written}
    assert "results_mine.csv" in names and "result_for_rank_mine" in names
    anon = _csv(tmp_path / "given/exp/asv_anon_mine/results_mine.csv")
    assert anon[0]["EER"] == "20.5"  # vpc2026's numbers
    assert "the archive had `_b1`" in (tmp_path / "given/UNMASK.md").read_text()
    with pytest.raises(InvalidInputError, match="--attacker 'nope'"):
        export_vpc(run, tmp_path / "x", attacker="nope")
    other = tmp_path / "other"
    other.mkdir()
    zoo = _result(other, attackers=("a", "b"))
    with pytest.raises(InvalidInputError, match=r"several attackers \(a, b\)"):
        export_vpc(zoo, tmp_path / "y")
    doc = json.loads((run / "results.json").read_text())
    doc["anonymizer"] = {"kind": "builtin", "name": "pitch"}
    (run / "results.json").write_text(json.dumps(doc))
    assert main(["export", str(run), "--out", str(tmp_path / "z")]) == 2
    assert "--suffix: the result records no VoicePrivacy suffix" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "z").exists()
    assert main(["export", str(run), "--out", str(tmp_path / "z"), "--suffix", "_pitch"]) == 0
    assert (tmp_path / "z/exp/results_summary/result_for_rank_pitch").is_file()


def test_an_archive_is_named_as_its_maker_declared_with_its_detected_suffix(
    tmp_path: Path,
) -> None:
    checked = tmp_path / "stage"
    checked.mkdir()
    (checked / "validation.json").write_text(
        json.dumps(
            {
                "archive": "data",
                "archive_sha256": "0" * 64,
                "out_dir": str(checked),
                "metadata": {"name": "Team X B5", "version": 2},
                "vpc_suffix": "_b5",
            }
        )
    )
    cfg = parse_config({"anonymizer": {"kind": "archive", "archive": str(tmp_path / "data")}})
    log = [SimpleNamespace(stage="archive-check", folder=checked)]
    record = anonymizer_record(cfg, log)
    assert record["name"] == "Team X B5" and record["vpc_suffix"] == "_b5"
    (checked / "validation.json").write_text(
        json.dumps({"archive": "data", "archive_sha256": "0" * 64, "out_dir": "x"})
    )
    record = anonymizer_record(cfg, log)
    assert record["name"] == "data" and record["vpc_suffix"] is None  # not "pitch"
    assert anonymizer_record(parse_config({}), [])["name"] == "pitch"
