"""The content-addressed stage runner: keys, reuse, crash safety, resumable stages, verification."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from services.pipeline.stage_runner import (
    DONE_FILE,
    REJECTED_DIR,
    StageRunner,
    compute_record_path,
    stage_folder_problem,
    stage_key,
)


def test_key_depends_on_stage_and_inputs_not_on_key_order() -> None:
    assert stage_key("a", {"x": 1, "y": 2}) == stage_key("a", {"y": 2, "x": 1})
    assert stage_key("a", {"x": 1}) != stage_key("b", {"x": 1})
    assert stage_key("a", {"x": 1}) != stage_key("a", {"x": 2})


def test_finished_stage_is_reused_and_not_recomputed(tmp_path: Path) -> None:
    runner = StageRunner(tmp_path)
    calls = []

    def fn(folder: Path) -> dict[str, str]:
        calls.append(folder)
        (folder / "out.txt").write_text("hello")
        return {"file": "out.txt"}

    first = runner.run("s", {"v": 1}, fn)
    second = runner.run("s", {"v": 1}, fn)
    assert len(calls) == 1
    assert not first.reused and second.reused
    assert second.folder == first.folder
    assert (second.folder / "out.txt").read_text() == "hello"
    assert second.outputs == {"file": "out.txt"}
    runner.run("s", {"v": 2}, fn)
    assert len(calls) == 2


def test_crash_mid_stage_leaves_nothing_trusted_and_reruns(tmp_path: Path) -> None:
    runner = StageRunner(tmp_path)

    def crash(folder: Path) -> dict[str, str]:
        (folder / "half.txt").write_text("half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        runner.run("s", {"v": 1}, crash)
    key = stage_key("s", {"v": 1})
    assert not (runner.folder("s", key) / DONE_FILE).exists()

    def ok(folder: Path) -> dict[str, str]:
        assert not (folder / "half.txt").exists()  # a non-resumable stage starts clean
        return {}

    out = runner.run("s", {"v": 1}, ok)
    assert not out.reused and (out.folder / DONE_FILE).is_file()


def test_resumable_stage_sees_what_the_crashed_run_left(tmp_path: Path) -> None:
    runner = StageRunner(tmp_path)

    def crash(folder: Path) -> dict[str, str]:
        (folder / "checkpoint").write_text("epoch 2")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        runner.run("train", {"v": 1}, crash, resumable=True)

    def resume(folder: Path) -> dict[str, str]:
        return {"resumed_from": (folder / "checkpoint").read_text()}

    out = runner.run("train", {"v": 1}, resume, resumable=True)
    assert out.outputs == {"resumed_from": "epoch 2"}


# --- verification before reuse ------------------------------------------------------------------


def _two_files(folder: Path) -> dict[str, str]:
    (folder / "audio").mkdir()
    (folder / "audio" / "a.wav").write_bytes(b"A" * 100)
    (folder / "audio" / "b.wav").write_bytes(b"B" * 200)
    return {"manifest": "audio"}


def _counting(calls: list[Path]) -> Callable[[Path], dict[str, str]]:
    def fn(folder: Path) -> dict[str, str]:
        calls.append(folder)
        return _two_files(folder)

    return fn


def test_done_record_carries_the_file_manifest(tmp_path: Path) -> None:
    out = StageRunner(tmp_path).run("s", {"v": 1}, _two_files)
    record = json.loads((out.folder / DONE_FILE).read_text())
    assert [(e["path"], e["size_bytes"]) for e in record["files"]] == [
        ("audio/a.wav", 100),
        ("audio/b.wav", 200),
    ]
    assert record["files"][0]["sha256"] == hashlib.sha256(b"A" * 100).hexdigest()
    assert stage_folder_problem(out.folder, check_sha256=True) is None


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (lambda f: (f / "audio" / "b.wav").unlink(), "missing"),
        (lambda f: (f / "audio" / "b.wav").write_bytes(b"B" * 10), "resized"),
        (lambda f: (f / "audio" / "c.wav").write_bytes(b"C"), "not in the manifest"),
        (lambda f: (f / DONE_FILE).write_text('{"outputs": {}}'), "no file manifest"),
        (lambda f: (f / DONE_FILE).write_text('{"outp'), "no readable"),
    ],
    ids=["missing-file", "resized-file", "extra-file", "no-manifest", "torn-done"],
)
def test_a_tampered_finished_folder_is_set_aside_and_recomputed(
    tmp_path: Path, tamper: Callable[[Path], object], reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    runner = StageRunner(tmp_path)
    calls: list[Path] = []
    first = runner.run("s", {"v": 1}, _counting(calls))
    tamper(first.folder)
    problem = stage_folder_problem(first.folder)
    assert problem is not None and reason in problem
    with caplog.at_level(logging.WARNING, logger="services.pipeline.stage_runner"):
        again = runner.run("s", {"v": 1}, _counting(calls))
    assert len(calls) == 2 and not again.reused
    assert stage_folder_problem(again.folder, check_sha256=True) is None
    assert (again.folder / "audio" / "b.wav").read_bytes() == b"B" * 200
    rejected = list((tmp_path / REJECTED_DIR / "s").iterdir())
    assert len(rejected) == 1 and rejected[0].name.startswith(first.key)
    assert any("not trusted" in r.getMessage() and reason in r.getMessage() for r in caplog.records)
    assert runner.run("s", {"v": 1}, _counting(calls)).reused and len(calls) == 2


def test_the_issues_folder_done_with_fewer_audio_files_than_its_manifest_is_not_reused(
    tmp_path: Path,
) -> None:
    # The reported corruption at small scale: DONE.json lists 10 WAVs, 3 are in the folder.
    runner = StageRunner(tmp_path)

    def anonymize(folder: Path) -> dict[str, str]:
        for i in range(10):
            (folder / f"u{i}.wav").write_bytes(bytes(64))
        (folder / "manifest.jsonl").write_text("".join(f'{{"utt": "u{i}"}}\n' for i in range(10)))
        return {"manifest": "manifest.jsonl"}

    first = runner.run("anonymize", {"v": 1}, anonymize)
    for i in range(3, 10):
        (first.folder / f"u{i}.wav").unlink()
    again = runner.run("anonymize", {"v": 1}, anonymize)
    assert not again.reused and len(list(again.folder.glob("*.wav"))) == 10


def test_same_size_change_is_found_by_the_sha256_check_only(tmp_path: Path) -> None:
    out = StageRunner(tmp_path).run("s", {"v": 1}, _two_files)
    (out.folder / "audio" / "a.wav").write_bytes(b"Z" * 100)
    assert stage_folder_problem(out.folder) is None  # reuse checks names and sizes (fast)
    problem = stage_folder_problem(out.folder, check_sha256=True)
    assert problem is not None and "audio/a.wav" in problem


def test_a_tmp_folder_finished_before_its_rename_is_published_without_recomputing(
    tmp_path: Path,
) -> None:
    runner = StageRunner(tmp_path)
    calls: list[Path] = []
    first = runner.run("s", {"v": 1}, _counting(calls))
    # A run killed between writing DONE.json and the rename leaves a complete .tmp folder.
    first.folder.rename(runner.tmp_folder("s", first.key))
    again = runner.run("s", {"v": 1}, _counting(calls))
    assert len(calls) == 1 and again.outputs == first.outputs
    assert stage_folder_problem(again.folder) is None
    assert not runner.tmp_folder("s", first.key).exists()


def test_a_resumable_stage_does_not_list_a_stale_done_record_in_its_manifest(
    tmp_path: Path,
) -> None:
    runner = StageRunner(tmp_path)
    key = stage_key("train", {"v": 1})
    tmp = runner.tmp_folder("train", key)
    tmp.mkdir(parents=True)
    (tmp / "checkpoint").write_text("epoch 1")
    (tmp / DONE_FILE).write_text("{torn")  # a torn record from a killed run

    def resume(folder: Path) -> dict[str, str]:
        assert not (folder / DONE_FILE).exists()
        return {"resumed_from": (folder / "checkpoint").read_text()}

    out = runner.run("train", {"v": 1}, resume, resumable=True)
    assert out.outputs == {"resumed_from": "epoch 1"}
    record = json.loads((out.folder / DONE_FILE).read_text())
    assert [e["path"] for e in record["files"]] == ["checkpoint"]


def test_the_lock_is_exclusive_between_threads_of_one_process(tmp_path: Path) -> None:
    runner = StageRunner(tmp_path)
    inside: list[int] = []
    overlap: list[bool] = []
    calls: list[str] = []

    def slow(folder: Path) -> dict[str, str]:
        inside.append(1)
        overlap.append(len(inside) > 1)
        time.sleep(0.2)
        calls.append(folder.name)
        inside.pop()
        return {}

    threads = [threading.Thread(target=runner.run, args=("s", {"v": 1}, slow)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [f"{stage_key('s', {'v': 1})}.tmp"] and overlap == [False]
    assert sorted(o.reused for o in runner.log) == [False, True]


def test_a_reused_stage_reports_the_seconds_it_took_when_computed(tmp_path: Path) -> None:
    """Provenance counts what reused stages cost: the compute record outlives the process, and
    it sits beside the folder, outside the manifest (the folder's bytes stay host-independent)."""

    def slow(folder: Path) -> dict[str, str]:
        time.sleep(0.2)
        (folder / "out.txt").write_text("x")
        return {}

    first = StageRunner(tmp_path).run("s", {"v": 1}, slow)
    assert first.compute_seconds is not None and first.compute_seconds >= 0.2
    again = StageRunner(tmp_path).run("s", {"v": 1}, slow)  # a later process
    assert again.reused and again.seconds == 0.0
    assert again.compute_seconds == pytest.approx(first.compute_seconds, abs=1e-3)
    assert stage_folder_problem(again.folder, check_sha256=True) is None
    assert not any(p.name.endswith(".compute.json") for p in again.folder.rglob("*"))
    compute_record_path(again.folder).unlink()  # a folder from before compute records
    assert StageRunner(tmp_path).run("s", {"v": 1}, slow).compute_seconds is None
