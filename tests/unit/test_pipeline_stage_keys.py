"""Refactoring guard: a tiny evaluation has the same stage keys and result as at a git ref.

Stage keys are content hashes of each stage's inputs, so a refactor of the pipeline that changes
one would silently recompute (and orphan) every stored stage. Opt-in, slow (two tiny evaluations
with every analysis, a few minutes on 2 cores)::

    UNMASK_STAGE_KEYS_REF=main pytest tests/unit/test_pipeline_stage_keys.py

The reference tree is ``git archive``d into a temporary folder and both trees run the same
script (public API only) in fresh interpreters; nothing is hard-coded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.configs import TINY_ANALYSES, tiny_config

REPO = Path(__file__).resolve().parents[2]
REF = os.environ.get("UNMASK_STAGE_KEYS_REF")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not REF, reason="set UNMASK_STAGE_KEYS_REF to a git ref to compare with"),
]

TINY: dict[str, Any] = tiny_config(
    scenarios=["original", "ignorant", "lazy-informed", "semi-informed"], analyses=TINY_ANALYSES
)

# Runs in the tree under test: the stage folders and the result without run-specific fields
# (creation time, code version, host and every wall-clock time or throughput).
SCRIPT = """
import json, sys
from pathlib import Path
from services.pipeline.config import parse_config
from services.pipeline.evaluation import run_evaluation

def timeless(value):
    if isinstance(value, dict):
        return {
            k: timeless(v) for k, v in value.items()
            if "seconds" not in k and k not in ("timings_s", "throughput")
        }
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value

config, out = json.loads(sys.argv[1]), Path(sys.argv[2])
result = timeless(run_evaluation(parse_config(config), out))
result.pop("created_at")
for key in ("code_version", "host"):
    result["provenance"].pop(key)
folders = sorted(str(p.relative_to(out / "stages")) for p in (out / "stages").glob("*/*"))
print(json.dumps({"stage_folders": folders, "result": result}, sort_keys=True, default=str))
"""


def _evaluate(tree: Path, out: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree), "UNMASK_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(TINY), str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        timeout=3600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_stage_keys_and_result_equal_those_at_the_reference(tmp_path: Path) -> None:
    assert REF is not None
    ref_tree = tmp_path / "ref"
    ref_tree.mkdir()
    archive = subprocess.run(
        ["git", "archive", REF], cwd=REPO, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(ref_tree)], input=archive, check=True)
    expected = _evaluate(ref_tree, tmp_path / "ref-out")
    actual = _evaluate(REPO, tmp_path / "out")
    assert actual["stage_folders"] == expected["stage_folders"]
    assert [(s["stage"], s["key"]) for s in actual["result"]["stages"]] == [
        (s["stage"], s["key"]) for s in expected["result"]["stages"]
    ]
    assert actual["result"] == expected["result"]
