"""The evaluation plan (services/pipeline/plan.py): computed from the config without torch, and
the one plan the printed plan, the platform's cost check and the runner read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.pipeline.config import parse_config
from services.pipeline.config_checks import load_checked_config, plan_lines
from services.pipeline.plan import SCENARIO_PLAN, plan_evaluation
from services.platform.jobs.cost import CostLimitError, check_job_cost
from services.settings import Settings
from services.storage.models import ProtocolRecord

REPO = Path(__file__).resolve().parents[2]


def test_the_plan_is_computed_without_importing_torch() -> None:
    code = (
        "import json, sys\n"
        "from services.pipeline.config import demo_config\n"
        "from services.pipeline.plan import plan_evaluation\n"
        "cfg = demo_config().model_copy(update={'attackers': 'strongest'})\n"
        "plan = plan_evaluation(cfg)\n"
        "print(json.dumps([plan.n_recognizers, 'torch' in sys.modules]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, done.stderr
    n_recognizers, torch_loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert n_recognizers > 0 and torch_loaded is False


def test_the_plan_reads_each_scenarios_recognizer_and_shares_equal_training() -> None:
    cfg = parse_config(
        {
            "scenarios": ["original", "ignorant", "lazy-informed", "semi-informed"],
            "seeds": [0, 1],
            "backends": ["cosine", "plda"],
            "training": {"epochs": 4},
            "attackers": [
                {"name": "baseline"},
                {"name": "asnorm", "normalization": "as-norm"},  # scoring only: shares training
                {"name": "long", "epochs_scale": 3},
            ],
        }
    )
    plan = plan_evaluation(cfg)
    # lazy-informed uses the recognizer trained on ORIGINAL speech: 2 conditions x 2 seeds.
    assert SCENARIO_PLAN["lazy-informed"][0] == "original"
    # Training order: original speech first (the transfer sources), then by seed.
    assert plan.attackers[0].recognizers == (
        ("original", 0),
        ("original", 1),
        ("anonymized", 0),
        ("anonymized", 1),
    )
    assert plan.n_recognizers == 8  # baseline's 4 (shared by asnorm) + long's 4
    assert plan.training_epochs == 4 * 4 + 4 * 12 and plan.max_epochs == 12
    assert plan.n_score_rows == 3 * (4 * 2 * 2)
    semi_plda = next(s for s in plan.attackers[0].scores if s.scenario == "semi-informed")
    assert semi_plda.backend == "cosine" and semi_plda.plda is None
    assert all(s.plda is not None for s in plan.attackers[1].scores)  # AS-norm cohort
    # Every embedding a score row reads is planned, once.
    for attacker in plan.attackers:
        assert len(set(attacker.embeddings)) == len(attacker.embeddings)
        for step in attacker.scores:
            assert step.embedding("enrollment") in attacker.embeddings
            assert step.embedding("trial") in attacker.embeddings
    stages = list(plan.stages())
    assert [s.phase for s in stages].count("train") == plan.n_recognizers
    assert [s.phase for s in stages].count("score") == plan.n_score_rows


def test_a_pretrained_attacker_trains_nothing_and_scores_every_scenario() -> None:
    cfg = parse_config(
        {
            "scenarios": ["ignorant", "lazy-informed", "semi-informed"],
            "attackers": [{"name": "baseline"}, {"name": "ge2e", "pretrained": "ge2e"}],
        }
    )
    plan = plan_evaluation(cfg)
    assert [a.name for a in plan.attackers] == ["baseline"]
    assert plan.pretrained == (("ge2e", "ge2e", None),)
    assert plan.n_recognizers == len(
        plan_evaluation(cfg.model_copy(update={"attackers": None})).distinct_recognizers()
    )
    scored = [s for s in plan.stages() if s.phase == "score" and s.attacker == "ge2e"]
    assert [s.inputs[1] for s in scored] == ["ignorant", "lazy-informed", "semi-informed"]
    assert not [s for s in plan.stages() if s.phase == "train" and s.attacker == "ge2e"]


def test_the_printed_plan_states_recognizers_and_epochs_per_attacker(tmp_path: Path) -> None:
    cfg = load_checked_config(REPO / "examples" / "configs" / "zoo-pitch.yaml")
    plan = plan_evaluation(cfg)
    lines = plan_lines(cfg, tmp_path / "stages")
    assert f"train ({plan.n_recognizers} recognizer(s)" in lines[1]
    per_attacker = [line for line in lines if line.startswith("plan: attacker ")]
    assert len(per_attacker) == len(plan.attackers)
    for attacker, line in zip(plan.attackers, per_attacker, strict=True):
        assert line.startswith(f"plan: attacker {attacker.name}: ")
        assert f"x {attacker.epochs} epochs" in line or "shares the" in line


def test_the_cost_check_bounds_the_longest_schedule_of_the_plan() -> None:
    cfg = parse_config({"training": {"epochs": 8}, "attackers": "strongest"})
    assert cfg.training.epochs == 8 and plan_evaluation(cfg).max_epochs == 24
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    protocol = ProtocolRecord(id=1, name="p", version=1, body={"limits": {"epochs": 20}})
    with pytest.raises(CostLimitError, match=r"training\.epochs: 24 is above the limit of 20"):
        check_job_cost(cfg, protocol, settings)
    roomy = ProtocolRecord(id=1, name="p", version=1, body={"limits": {"epochs": 24}})
    check_job_cost(cfg, roomy, settings)
