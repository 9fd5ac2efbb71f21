"""The evaluation config and the phases import without torch or SpeechBrain.

The API process and the Celery app read and validate configs; loading torch there costs seconds
and hundreds of MB. Each check runs in a fresh interpreter, so nothing imported by other tests
hides a heavy import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "speechbrain")


def _modules_after_import(module: str) -> list[str]:
    code = (
        "import json, sys\n"
        f"import {module}\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "module",
    [
        "services.pipeline.config",
        "services.pipeline.config_reference",
        "services.pipeline.config_checks",
        "services.pipeline.phases",
        "services.attacker.training_config",
        "services.platform.jobs",
        "workers.app",
        "api.app",
    ],
)
def test_module_imports_without_torch_or_speechbrain(module: str) -> None:
    assert _modules_after_import(module) == []


def test_a_full_config_validates_without_torch() -> None:
    code = (
        "import sys\n"
        "from services.pipeline.config import demo_config, parse_config\n"
        "cfg = parse_config(demo_config().model_dump(mode='json'))\n"
        "assert cfg.training.preset == 'tiny'\n"
        "print('torch' in sys.modules, 'speechbrain' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_preset_names_are_the_model_presets() -> None:
    from typing import get_args

    from services.attacker.presets import PRESETS
    from services.attacker.training_config import PresetName

    assert set(get_args(PresetName)) == set(PRESETS)


def test_phases_are_defined_once() -> None:
    from services.pipeline import evaluation, phases

    assert evaluation.PHASES is phases.PHASES
    assert phases.PHASES[0] == "corpus" and phases.PHASES[-1] == "report"
