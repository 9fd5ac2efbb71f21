"""The contention benchmark's cells: each policy's child process gets the threads and wait
policy it names (the `new` child through the same code path as the CLI), and the table's
ratios are taken against the right cells."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "contention.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("contention_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_policy_environments_and_ratios() -> None:
    bench = _module()
    old, one = bench.policy_env("old"), bench.policy_env("1thread")
    assert "OMP_WAIT_POLICY" not in old and "OMP_NUM_THREADS" not in old
    assert one["OMP_NUM_THREADS"] == "1"
    text = bench.table(
        {("old", 0): 2.0, ("old", 1): 8.0, ("new", 0): 1.0, ("new", 1): 1.5},
        ["old", "new"],
        [0, 1],
        "s/step",
    )
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in text.splitlines()[1:]}
    assert rows[("old", "1")] == ["8.00", "4.00", "1.00"]
    assert rows[("new", "1")] == ["1.50", "1.50", "0.19"]


def test_the_new_policy_child_sleeps_and_uses_the_available_cpus() -> None:
    from services.threads import available_cpus

    bench = _module()
    small = ["--steps", "1", "--batch", "2", "--seconds", "0.5"]
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--child", "new", *small],
        env=bench.policy_env("new"),
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["wait"] == "PASSIVE"
    assert result["threads"] == available_cpus()
    assert result["median_s"] > 0
