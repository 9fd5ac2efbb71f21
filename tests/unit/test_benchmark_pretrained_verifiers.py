"""benchmarks/pretrained_verifiers.py runs and prints one row per verifier, GE2E's ratio 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_quick_run_prints_every_verifier() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "pretrained_verifiers.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()[2:]}
    assert set(rows) == {"ge2e", "ecapa", "hf-xvector"}
    assert rows["ge2e"][2] == "1.0"
    assert all(float(speed) > 0 for _, speed, _ in rows.values())
