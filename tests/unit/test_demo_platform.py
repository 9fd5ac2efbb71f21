"""The platform demo's robustness: stalled jobs, dead jobs in its folder, children that die with
it, one line instead of a traceback. (The demo end to end: tests/e2e/test_platform_demo.py.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli import demo_platform
from cli.demo_platform import JOB_KEY_FILE, DemoError, JobWatch, start_demo_job

ROOT = Path(__file__).resolve().parents[2]


def _job(state: str, progress: float = 0.3, heartbeat: str | None = "t0") -> dict[str, Any]:
    stage = {"name": "train", "state": state, "progress": progress, "heartbeat_at": heartbeat}
    return {"id": 1, "state": state, "stages": [stage], "error_message": None}


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _client(answers: Iterator[dict[str, Any]]) -> httpx.Client:
    return httpx.Client(
        base_url="http://demo.test",
        transport=httpx.MockTransport(lambda request: httpx.Response(200, json=next(answers))),
    )


def test_a_job_without_heartbeat_or_progress_is_stalled_after_the_timeout() -> None:
    clock = _Clock()
    watch = JobWatch(
        _client(iter([_job("running")] * 10)), 1, None, stall_timeout_s=60, clock=clock
    )
    watch.poll()
    clock.now = 59.0
    watch.poll()
    clock.now = 61.0
    with pytest.raises(DemoError, match=r"job 1 stalled: no heartbeat, progress or state change"):
        watch.poll()


def test_a_slow_job_that_heartbeats_is_never_timed_out() -> None:
    clock = _Clock()
    beats = iter([_job("running", 0.3, f"t{i}") for i in range(100)])
    watch = JobWatch(_client(beats), 1, None, stall_timeout_s=60, clock=clock)
    for _ in range(100):  # 100 polls 30 s apart: 50 minutes, each with a new heartbeat
        assert watch.poll()["state"] == "running"
        clock.now += 30.0


def test_a_finished_job_is_returned_even_when_the_worker_is_gone() -> None:
    worker = subprocess.Popen([sys.executable, "-c", "pass"])
    worker.wait()
    watch = JobWatch(_client(iter([_job("succeeded", 1.0)])), 1, worker)  # type: ignore[arg-type]
    assert watch.poll()["state"] == "succeeded"
    dead = JobWatch(_client(iter([_job("running")])), 1, worker)  # type: ignore[arg-type]
    with pytest.raises(DemoError, match="the worker exited with code 0"):
        dead.poll()


class _JobsApi:
    """``POST /v1/jobs`` with idempotency keys, the first job already in ``first_state``."""

    def __init__(self, first_state: str) -> None:
        self.by_key: dict[str, dict[str, Any]] = {}
        self.first_state = first_state

    def __call__(self, request: httpx.Request) -> httpx.Response:
        key = request.headers["Idempotency-Key"]
        if key in self.by_key:
            return httpx.Response(200, json=self.by_key[key])
        state = self.first_state if not self.by_key else "queued"
        job = {"id": len(self.by_key) + 1, "state": state, "error_message": "boom"}
        self.by_key[key] = job
        return httpx.Response(201, json=job)


@pytest.mark.parametrize("dead", ["cancelled", "failed"])
def test_a_dead_job_in_the_folder_is_replaced_by_a_fresh_one(
    tmp_path: Path, dead: str, capsys: pytest.CaptureFixture[str]
) -> None:
    api = _JobsApi(dead)
    client = httpx.Client(base_url="http://demo.test", transport=httpx.MockTransport(api))
    (tmp_path / JOB_KEY_FILE).write_text("demo-7\n")
    api.by_key["demo-7"] = {"id": 1, "state": dead, "error_message": "boom"}
    job = start_demo_job(client, 7, 1, tmp_path)
    assert job["id"] == 2 and job["state"] == "queued"
    assert f"job 1 of this folder {dead}: boom; started a fresh job 2" in capsys.readouterr().err
    # The folder now follows the fresh job: a later run gets the same job back.
    assert start_demo_job(client, 7, 1, tmp_path)["id"] == 2
    assert len(api.by_key) == 2


def test_a_live_job_is_followed_again_and_fresh_starts_a_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api = _JobsApi("running")
    client = httpx.Client(base_url="http://demo.test", transport=httpx.MockTransport(api))
    assert start_demo_job(client, 7, 1, tmp_path)["id"] == 1
    assert (tmp_path / JOB_KEY_FILE).read_text().strip() == "demo-7"
    assert start_demo_job(client, 7, 1, tmp_path)["id"] == 1
    assert start_demo_job(client, 7, 1, tmp_path, fresh=True)["id"] == 2
    assert "--fresh: started a new job 2" in capsys.readouterr().err
    assert start_demo_job(client, 7, 1, tmp_path)["id"] == 2


def test_any_failure_is_one_line_and_exit_1_never_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @contextlib.contextmanager
    def broken(state_dir: Path) -> Iterator[tuple[str, Any]]:
        raise KeyError("surprise")
        yield  # pragma: no cover

    monkeypatch.setattr(demo_platform, "embedded_platform", broken)
    assert demo_platform.run_platform_demo(tmp_path) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "unmask demo: KeyError: 'surprise'" in err
    assert "KeyError" in (tmp_path / "platform" / "demo-error.log").read_text()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie waiting for its reaper is dead too
        return " Z " not in Path(f"/proc/{pid}/stat").read_text()
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux")
def test_a_child_started_through_die_with_parent_dies_with_a_killed_parent() -> None:
    parent_script = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-m', 'cli.die_with_parent', '/bin/sleep',"
        " '300'], env={**os.environ, 'UNMASK_PARENT_PID': str(os.getpid())})\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    time.sleep(1.0)  # the guard is set before exec; give the child time to get there
    assert _alive(child_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child_pid), "the child outlived its SIGKILLed parent"


def test_die_with_parent_refuses_an_orphan_start() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cli.die_with_parent", "/bin/echo", "ran"],
        cwd=ROOT,
        env={**os.environ, "UNMASK_PARENT_PID": "1"},  # not our parent: it died already
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "ran" not in done.stdout
    ok = subprocess.run(
        [sys.executable, "-m", "cli.die_with_parent", "/bin/echo", json.dumps("ran")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0 and "ran" in ok.stdout
