"""The reported case at small scale: two ``unmask evaluate`` started together on one ``--stages``.

Before per-key locks, one run wiped the other's in-progress stage folders and both failed (or
left a stage marked done with files missing). Now each stage is computed by exactly one of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from services.pipeline.stage_runner import stage_folder_problem
from support.configs import OMIT, tiny_config

pytestmark = pytest.mark.slow

TINY = tiny_config(
    name="tiny-shared-store",
    scenarios=["original", "ignorant"],
    training={"epochs": 1, "target_classifier": OMIT},
    backends=["cosine"],
)


@pytest.mark.timeout(600)
def test_two_evaluations_sharing_a_stage_store_compute_each_stage_once(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    stages = tmp_path / "stages"
    env = {**os.environ, "UNMASK_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path.cwd()), env.get("PYTHONPATH", "")])
    code = "import sys; from cli.main import main; sys.exit(main())"
    command = [sys.executable, "-c", code, "evaluate", str(config), "--stages", str(stages)]
    runs = [
        subprocess.Popen(
            [*command, "--out", str(tmp_path / f"out{i}")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 2)
    ]
    errors = [run.communicate(timeout=580)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], errors
    docs = [json.loads((tmp_path / f"out{i}" / "results.json").read_text()) for i in (1, 2)]
    reused = [{(s["stage"], s["key"]): s["reused"] for s in doc["stages"]} for doc in docs]
    assert reused[0].keys() == reused[1].keys()
    assert all(reused[0][k] != reused[1][k] for k in reused[0])  # one computed, one reused
    rows = [[(r["scenario"], r["seed"], r["eer_percent"]) for r in doc["rows"]] for doc in docs]
    assert rows[0] == rows[1]
    for stage, key in reused[0]:
        assert stage_folder_problem(stages / stage / key, check_sha256=True) is None
    assert not list(stages.glob("*/*.tmp")) and not (stages / ".rejected").exists()
