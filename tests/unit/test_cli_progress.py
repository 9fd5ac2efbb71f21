"""Progress without a terminal (cli/progress.py): bounded rate, heartbeat, elapsed time that
keeps counting, the phase's place among the pipeline's phases."""

from __future__ import annotations

import io
import re
import time
from datetime import UTC, datetime

from cli.progress import PlainProgress


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _progress() -> tuple[PlainProgress, io.StringIO, FakeClock]:
    stream, clock = io.StringIO(), FakeClock()
    fixed = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    progress = PlainProgress(
        stream, min_interval_s=10, heartbeat_s=60, clock=clock, now=lambda: fixed
    )
    return progress, stream, clock


def test_lines_at_a_bounded_rate_with_phase_changes_and_ends_always_shown() -> None:
    progress, stream, clock = _progress()
    progress("corpus", 0.0, "generating")
    for i in range(1, 100):  # 99 updates within 9.9 s: none printed
        clock.t = i * 0.1
        progress("corpus", i / 200, "generating")
    clock.t = 10.0
    progress("corpus", 0.5, "half")  # 10 s after the last line
    clock.t = 11.0
    progress("corpus", 1.0, "done")  # the end of a phase is always shown
    progress("train", 0.0, "anonymized seed 0")  # so is a new phase
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4, lines
    assert lines[0].startswith("2026-11-23T12:00:00Z [0:00:00] phase 1 of 8 corpus   0%")
    assert "phase 1 of 8 corpus  50%, ~0:00:10 left: half" in lines[1]
    assert lines[3].endswith("phase 3 of 8 train   0%: anonymized seed 0")


def test_a_heartbeat_keeps_a_long_step_visible_and_elapsed_keeps_counting() -> None:
    progress, stream, clock = _progress()
    progress("train", 1.0, "epoch 5 of 5")
    clock.t = 30.0
    progress.heartbeat()  # printed 30 s ago: quiet
    assert len(stream.getvalue().splitlines()) == 1
    clock.t = 61.0
    progress.heartbeat()
    clock.t = 125.0
    progress.heartbeat()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3
    assert re.search(
        r"\[0:01:01\] phase 3 of 8 train 100%: epoch 5 of 5 \(still working\)", lines[1]
    )
    assert "[0:02:05]" in lines[2]


def test_the_heartbeat_thread_runs_and_stops() -> None:
    stream = io.StringIO()
    with PlainProgress(stream, min_interval_s=0.0, heartbeat_s=0.05) as progress:
        progress("embed", 0.2, "x")
        deadline = 0
        while stream.getvalue().count("still working") == 0 and deadline < 200:
            time.sleep(0.01)
            deadline += 1
    assert "still working" in stream.getvalue()


def test_a_measured_eta_in_the_message_is_not_second_guessed() -> None:
    progress, stream, clock = _progress()
    progress("train", 0.0, "recognizer 1 of 2")
    clock.t = 20.0
    progress("train", 0.5, "recognizer 1 of 2: epoch 3/6 step 4/17 ETA 700s")
    line = stream.getvalue().splitlines()[-1]
    assert "left" not in line and line.endswith("ETA 700s")


def test_a_log_gets_full_width_lines() -> None:
    import sys

    from cli.progress import LOG_WIDTH, stdout_console

    assert not sys.stdout.isatty()  # pytest captures stdout
    console = stdout_console()
    assert console.width == LOG_WIDTH >= 200


def test_demo_log_lines_keep_the_whole_stage_message(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Redirected demo output (a CI log) carries each stage's full last log line: the training
    ETA sits past column 70, where the terminal's progress bar cuts."""
    import sys
    from types import SimpleNamespace

    from cli import demo_platform

    long_line = (
        "[train] recognizer 2 of 2 (anonymized seed 0): epoch 6/12 step 2/17 ETA 24s"
        " (a message longer than any column limit)"
    )
    jobs = iter(
        [
            {
                "state": "running",
                "stages": [
                    {"name": "train", "state": "running", "progress": 0.5, "log_tail": long_line},
                    {"name": "report", "state": "running", "progress": 0.0, "log_tail": ""},
                ],
            },
            {
                "state": "succeeded",
                "stages": [
                    {"name": "train", "state": "succeeded", "progress": 1.0, "log_tail": long_line},
                    {"name": "report", "state": "succeeded", "progress": 1.0, "log_tail": ""},
                ],
            },
        ]
    )
    response = SimpleNamespace(status_code=200)
    client = SimpleNamespace(
        get=lambda *a, **k: SimpleNamespace(**vars(response), json=lambda: next(jobs))
    )
    worker = SimpleNamespace(poll=lambda: None)
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(demo_platform, "POLL_INTERVAL_S", 0.0)
    watch = demo_platform.JobWatch(client, 1, worker)  # type: ignore[arg-type]
    job = demo_platform._plain_progress_loop(watch)
    assert job["state"] == "succeeded"
    out = stream.getvalue()
    assert f"running: {long_line}\n" in out
    # A stage with no log line yet shows its state alone, without a dangling colon.
    assert re.search(r"phase \d of \d report +0%: running\n", out)
