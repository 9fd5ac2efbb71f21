"""Every config value that scales a job's work or memory is bounded in one place
(services/platform/jobs/cost.py), at job creation and on re-runs."""

from __future__ import annotations

from typing import Any

import pytest

from services.errors import ConfigError
from services.pipeline.config import parse_config
from services.pipeline.plan import plan_evaluation
from services.platform.jobs.config import build_job_config, check_stored_config_cost
from services.platform.jobs.cost import COST_KNOBS, CostLimitError, training_work
from services.settings import Settings
from services.storage.models import ProtocolRecord, Submission

BASE: dict[str, Any] = {"synthetic": {"n_speakers": 12}, "backends": ["cosine"]}


def _protocol(limits: dict[str, Any] | None = None) -> ProtocolRecord:
    body: dict[str, Any] = {"config": BASE}
    if limits:
        body["limits"] = limits
    return ProtocolRecord(id=3, name="p", version=2, body=body)


def _builtin() -> Submission:
    return Submission(id=7, name="sub", kind="builtin", builtin_name="pitch", builtin_params={})


def _attackers(n: int, epochs: int) -> list[dict[str, Any]]:
    return [
        {"name": f"a{i}", "training": {"epochs": epochs, "lr": 1e-3 + i * 1e-6}} for i in range(n)
    ]


@pytest.mark.parametrize(
    ("overrides", "field", "setting"),
    [
        ({"training": {"crop_seconds": 1e6}}, "training.crop_seconds", "CROP_SECONDS"),
        ({"attackers": _attackers(40, 200)}, "attackers", "ATTACKERS"),
        (
            {"attackers": [{"name": "long", "training": {"epochs": 5000}}]},
            "training.epochs",
            "EPOCHS",
        ),
        (
            {"analyses": {"size_study": {"trial_counts": list(range(1, 20001))}}},
            "analyses.size_study.(speaker|enrollment|trial)_counts",
            "SIZE_STUDY_COUNTS",
        ),
        (
            {"analyses": {"size_study": {"enrollment_counts": list(range(1, 20001))}}},
            "analyses.size_study.(speaker|enrollment|trial)_counts",
            "SIZE_STUDY_COUNTS",
        ),
        # Each factor within its own bound, their product is not: 8 attackers x 200 epochs x
        # 10 s crops x 2 scenarios x 1 seed = 32 000 crop-seconds.
        (
            {"attackers": _attackers(8, 200), "training": {"crop_seconds": 10.0}},
            "seeds x scenarios x attackers' epochs x crop_seconds",
            "TRAINING_WORK",
        ),
    ],
)
def test_every_knob_that_scales_work_is_bounded(
    overrides: dict[str, Any], field: str, setting: str
) -> None:
    with pytest.raises(CostLimitError) as info:
        build_job_config(_protocol(), _builtin(), overrides, settings=Settings())
    message = str(info.value)
    assert f"body.config_overrides.{field}:" in message
    assert f"UNMASK_MAX_JOB_{setting}" in message


def test_rerun_checks_the_same_knobs() -> None:
    stored = build_job_config(_protocol(), _builtin(), {"attackers": _attackers(3, 10)})
    check_stored_config_cost(stored, _protocol(), settings=Settings())
    with pytest.raises(CostLimitError, match=r"re-run\.attackers: 3 is above the limit of 2"):
        check_stored_config_cost(
            stored, _protocol({"attackers": 2}), settings=Settings(), source="re-run"
        )


def test_training_work_is_the_product_of_its_factors() -> None:
    config = parse_config(
        {
            "seeds": [0, 1],
            "scenarios": ["original", "ignorant", "semi-informed"],
            "training": {"epochs": 4, "crop_seconds": 2.0},
            "attackers": [{"name": "baseline"}, {"name": "long", "epochs_scale": 3}],
        }
    )
    # 2 seeds x 2 trained recognizers (original, anonymized) x (4 x 2 s + 12 x 2 s)
    assert training_work(plan_evaluation(config)) == pytest.approx(2 * 2 * (8 + 24))


def test_every_knob_has_a_setting_and_a_protocol_limit() -> None:
    settings = Settings()
    for knob in COST_KNOBS:
        assert getattr(settings, knob.setting) > 0
    from api.schemas import CostLimits

    assert set(CostLimits.model_fields) == {knob.name for knob in COST_KNOBS}


@pytest.mark.parametrize(
    "overrides",
    [{"seeds": [10**400]}, {"seeds": [0, -1]}, {"training": {"seed": 2**70}}],
)
def test_seeds_outside_the_generators_range_are_refused(overrides: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"seed.* is outside 0 \.\. 4294967295"):
        build_job_config(_protocol(), _builtin(), overrides, settings=Settings())


def test_an_archive_runs_only_under_the_protocol_it_was_validated_against() -> None:
    from services.platform.jobs.service import ArchiveProtocolMismatchError, create_job

    archive = Submission(
        id=9, name="a", kind="archive", archive_blob_key="archives/x", protocol_id=2
    )
    for config in (None, {"name": "stored"}):  # a new job and a re-run alike
        with pytest.raises(ArchiveProtocolMismatchError, match=r"body\.protocol_id: .*protocol 2"):
            create_job(
                None,  # type: ignore[arg-type]  # refused before the session is used
                team_id=1,
                submission=archive,
                protocol=_protocol(),
                config=config,
            )
