"""The content-addressed stage runner: keys, reuse, crash safety, resumable stages."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.pipeline.stage_runner import DONE_FILE, StageRunner, stage_key


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
