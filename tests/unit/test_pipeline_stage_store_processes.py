"""One stage store shared by real processes: races on a stage key and runs killed mid-stage.

Each child is a fresh interpreter (``python -c``) that runs stages on the shared folder; the
stage functions append one line per computation to a log outside the store, so the test can
count who computed what.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from services.pipeline.stage_runner import DONE_FILE, StageRunner, stage_folder_problem, stage_key

FILES_PER_STAGE = 8

# argv: work_dir, computations log, ready file, go file, first round, rounds, mode; mode is
# "plain" or "resume" (a non-resumable / resumable stage), "hang-plain" or "hang" (the same, but
# the stage stops for good after writing three files), or "race" ("plain", and every round
# starts when all children are at it).
_CHILD = r"""
import json, os, sys, time
from pathlib import Path
from services.pipeline.stage_runner import StageRunner

work, log, ready, go = (Path(a) for a in sys.argv[1:5])
first, rounds, mode = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
FILES_PER_STAGE = int(os.environ["FILES_PER_STAGE"])
runner = StageRunner(work)
ready.touch()
while not go.exists():
    time.sleep(0.002)

def make(round_):
    def fn(folder):
        with open(log, "a") as handle:
            handle.write(f"{round_} {os.getpid()}\n")
        done = sorted(folder.glob("part*.bin"))  # a resumable stage continues after these
        for j in range(len(done), FILES_PER_STAGE):
            (folder / f"part{j}.bin").write_bytes(bytes([round_ % 256]) * (1000 + j))
            if mode.startswith("hang") and j == 2:
                (work / "started").touch()
                time.sleep(600)  # killed here
            time.sleep(0.003)
        return {"round": round_, "resumed_after": len(done)}
    return fn

def barrier(round_):
    # Both racers (their ready files name them) start each round together.
    (work.parent / f"{ready.stem}.round{round_}").touch()
    racers = list(work.parent.glob("*.ready"))
    while not all((work.parent / f"{p.stem}.round{round_}").exists() for p in racers):
        time.sleep(0.001)

results = []
for r in range(first, first + rounds):
    if mode == "race":
        barrier(r)
    start = time.time()
    out = runner.run("race", {"round": r}, make(r), resumable=mode in ("hang", "resume"))
    results.append({"round": r, "reused": out.reused, "folder": str(out.folder),
                    "outputs": out.outputs, "start": start, "end": time.time()})
print(json.dumps(results))
"""


def _start(tmp_path: Path, name: str, first: int, rounds: int, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FILES_PER_STAGE": str(FILES_PER_STAGE)}
    env["PYTHONPATH"] = os.pathsep.join([str(Path.cwd()), env.get("PYTHONPATH", "")])
    args = [
        str(tmp_path / "stages"),
        str(tmp_path / "computations.log"),
        str(tmp_path / f"{name}.ready"),
        str(tmp_path / "go"),
        str(first),
        str(rounds),
        mode,
    ]
    # stderr is inherited: a child's traceback shows in pytest's captured output.
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, *args], env=env, stdout=subprocess.PIPE, text=True
    )


def _wait_for(path: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.01)


def _computations(tmp_path: Path) -> list[tuple[int, int]]:
    log = tmp_path / "computations.log"
    lines = log.read_text().split() if log.exists() else []
    return [(int(r), int(p)) for r, p in zip(lines[::2], lines[1::2], strict=True)]


def _check_complete(folder: Path, round_: int) -> None:
    assert stage_folder_problem(folder, check_sha256=True) is None
    for j in range(FILES_PER_STAGE):
        assert (folder / f"part{j}.bin").read_bytes() == bytes([round_ % 256]) * (1000 + j)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_two_processes_racing_on_each_stage_compute_it_once(tmp_path: Path) -> None:
    rounds = 25
    children = [_start(tmp_path, name, 0, rounds, "race") for name in ("a", "b")]
    for name in ("a", "b"):
        _wait_for(tmp_path / f"{name}.ready")
    (tmp_path / "go").touch()
    deadline = time.monotonic() + 100
    while any(c.poll() is None for c in children) and time.monotonic() < deadline:
        if any(c.returncode for c in children):  # one failed: the other would wait for it
            break
        time.sleep(0.05)
    for c in children:
        if c.poll() is None:
            c.kill()
    outs = [c.communicate()[0] for c in children]
    assert [c.returncode for c in children] == [0, 0]
    results = [json.loads(out) for out in outs]
    computed = _computations(tmp_path)
    assert sorted(r for r, _ in computed) == list(range(rounds))  # each stage exactly once
    for r in range(rounds):
        a, b = results[0][r], results[1][r]
        assert sorted([a["reused"], b["reused"]]) == [False, True]
        assert a["folder"] == b["folder"] and a["outputs"] == b["outputs"]
        _check_complete(Path(a["folder"]), r)
    assert not list((tmp_path / "stages" / "race").glob("*.tmp"))
    # They really raced: in most rounds the reusing process asked while the other was computing.
    overlapping = 0
    for a, b in zip(*results, strict=True):
        computer, reuser = (b, a) if a["reused"] else (a, b)
        overlapping += reuser["start"] < computer["end"]
    assert overlapping >= rounds // 2


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("resumable", [False, True])
def test_a_process_killed_mid_stage_leaves_the_waiting_one_a_correct_result(
    tmp_path: Path, resumable: bool
) -> None:
    victim = _start(tmp_path, "victim", 0, 1, "hang" if resumable else "hang-plain")
    _wait_for(tmp_path / "victim.ready")
    (tmp_path / "go").touch()
    _wait_for(tmp_path / "stages" / "started")
    waiter = _start(tmp_path, "waiter", 0, 1, "resume" if resumable else "plain")
    _wait_for(tmp_path / "waiter.ready")
    time.sleep(0.3)  # the waiter is blocked on the victim's lock
    assert waiter.poll() is None
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    out, _ = waiter.communicate(timeout=60)
    assert waiter.returncode == 0
    [result] = json.loads(out)
    assert not result["reused"]
    _check_complete(Path(result["folder"]), 0)
    # The victim had written part0..part2 into the stage's .tmp folder before it was killed.
    assert result["outputs"]["resumed_after"] == (3 if resumable else 0)
    assert [pid for _, pid in _computations(tmp_path)] == [victim.pid, waiter.pid]


@pytest.mark.timeout(120)
def test_a_new_run_after_a_killed_one_finds_no_stale_lock_and_starts_clean(tmp_path: Path) -> None:
    victim = _start(tmp_path, "victim", 0, 1, "hang-plain")
    _wait_for(tmp_path / "victim.ready")
    (tmp_path / "go").touch()
    _wait_for(tmp_path / "stages" / "started")
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    runner = StageRunner(tmp_path / "stages")
    key = stage_key("race", {"round": 0})
    assert runner.tmp_folder("race", key).is_dir()
    assert not (runner.folder("race", key) / DONE_FILE).exists()

    def fresh(folder: Path) -> dict[str, int]:
        assert list(folder.iterdir()) == []  # the killed run's files were cleared
        for j in range(FILES_PER_STAGE):
            (folder / f"part{j}.bin").write_bytes(bytes([0]) * (1000 + j))
        return {"round": 0}

    out = runner.run("race", {"round": 0}, fresh)
    assert not out.reused
    _check_complete(out.folder, 0)
