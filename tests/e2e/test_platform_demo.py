"""The embedded platform demo (`cli/demo_platform.py`) end to end, on a tiny config.

Runs in a subprocess (the demo sets ``UNMASK_*`` variables for its API and worker): SQLite,
local blobs, filesystem broker, API in a thread, one Celery worker subprocess, all over HTTP.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from support.configs import micro_protocol_config

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TINY = micro_protocol_config(
    name="tiny-demo",
    synthetic={"utts_per_speaker": 5},
    scenarios=["ignorant", "semi-informed"],
    training={"batch_size": 8, "crop_seconds": 1.5},
    metrics={"bootstrap_resamples": 0},
)
SCRIPT = """
import json, sys
from pathlib import Path
from cli.demo_platform import run_platform_demo
from services.pipeline.config import parse_config
sys.exit(run_platform_demo(Path(sys.argv[1]), parse_config(json.loads(sys.argv[2]))))
"""


def test_platform_demo_runs_a_job_over_http_and_prints_the_leaderboard(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), json.dumps(TINY)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    out = done.stdout
    assert "semi-informed" in out and "EER %" in out
    board = json.loads(out[out.index("{") :])  # the leaderboard JSON closes the output
    assert board["metric"] == "eer_percent" and board["entries"][0]["rank"] == 1
    assert board["entries"][0]["submission_name"] == "pitch (built-in)"
    state = tmp_path / "platform"
    with sqlite3.connect(state / "unmask.db") as db:
        states = db.execute("SELECT state FROM stages").fetchall()
        (jobs,) = db.execute("SELECT count(*) FROM jobs WHERE state = 'succeeded'").fetchone()
    assert jobs == 1 and {s for (s,) in states} == {"succeeded"}
    # The page URLs go to stderr with the progress display (stdout ends with the JSON).
    assert re.search(r"leaderboard page: http://127\.0\.0\.1:\d+/protocols/\d+", done.stderr)
    assert list((state / "blobs" / "stages" / "train").glob("*/INDEX.json"))
