"""A job's config is built once (services/platform/jobs/config.py): at creation from protocol,
overrides and submission; at run time the stored config is only bound to the host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.errors import ConfigError, InvalidInputError
from services.platform.jobs.config import (
    build_job_config,
    check_stored_config_cost,
    run_config,
    stored_evaluation_config,
)
from services.platform.jobs.cost import CostLimitError
from services.settings import Settings
from services.storage.models import Job, ProtocolRecord, Submission

BASE: dict[str, Any] = {"synthetic": {"n_speakers": 12}, "backends": ["cosine"]}


def _protocol() -> ProtocolRecord:
    return ProtocolRecord(id=3, name="p", version=2, body={"config": BASE})


def _submission(kind: str, **fields: Any) -> Submission:
    return Submission(id=7, name="sub", kind=kind, **fields)


def test_the_anonymizer_comes_from_the_submission_once() -> None:
    builtin = _submission("builtin", builtin_name="pitch", builtin_params={"semitones": 3})
    config = build_job_config(_protocol(), builtin, {"seeds": [0, 1]})
    assert config["anonymizer"]["name"] == "pitch"
    assert config["anonymizer"]["params"] == {"semitones": 3}
    assert config["seeds"] == [0, 1] and config["name"] == "sub on p v2"
    archive = _submission("archive", archive_blob_key="archives/t/abc", archive_sha256="f" * 64)
    section = build_job_config(_protocol(), archive, {})["anonymizer"]
    assert (section["kind"], section["archive"]) == ("archive", "archives/t/abc")
    image = _submission("container", container_image="x/y", container_digest="sha256:" + "a" * 64)
    assert build_job_config(_protocol(), image, {})["anonymizer"]["image"] == (
        "x/y@sha256:" + "a" * 64
    )
    with pytest.raises(ConfigError, match=r"config_overrides\.anonymizer"):
        build_job_config(_protocol(), builtin, {"anonymizer": {"name": "vtln"}})
    for name in ("protocol", "protocol_file"):  # the former and the current name of one field
        with pytest.raises(ConfigError, match=r"config_overrides\.protocol_file: cannot"):
            build_job_config(_protocol(), builtin, {name: "/data/p.json"})


@pytest.mark.parametrize(
    "overrides",
    [
        {"training": {"init_from": "/etc"}},  # the field's former name
        {"training": {"pretrained_ecapa_path": "/etc"}},
        {"training": {"ssl_model_path": "/root/.ssh"}},
        {"utility": {"asr": {"source": "pretrained", "pretrained_path": "/tmp/x"}}},
    ],
)
def test_a_job_cannot_point_workers_at_folders_of_their_disks(overrides: dict[str, Any]) -> None:
    builtin = _submission("builtin", builtin_name="pitch", builtin_params={})
    with pytest.raises(ConfigError, match=r"cannot be overridden .* the protocol names"):
        build_job_config(_protocol(), builtin, overrides)


@pytest.mark.parametrize(
    "attacker",
    [
        {"name": "x", "pretrained": "hf-xvector", "pretrained_path": "/etc"},
        {"name": "x", "pretrained": "ecapa", "pretrained_path": "/root"},
        {"name": "x", "training": {"init_from": "/etc"}},  # the field's former name
        {"name": "x", "training": {"pretrained_ecapa_path": "/etc"}},
        {"name": "x", "training": {"front_end": "ssl", "ssl_model_path": "/root/.ssh"}},
    ],
)
def test_a_job_cannot_point_a_zoo_attacker_at_folders_of_the_workers_disks(
    attacker: dict[str, Any],
) -> None:
    builtin = _submission("builtin", builtin_name="pitch", builtin_params={})
    overrides = {"attackers": [{"name": "baseline"}, attacker]}
    with pytest.raises(ConfigError, match=r"attackers\[1\]\..* cannot be overridden"):
        build_job_config(_protocol(), builtin, overrides)


def test_run_time_binds_device_and_the_archive_folder_only(tmp_path: Path) -> None:
    archive = _submission("archive", archive_blob_key="archives/t/abc", archive_sha256="f" * 64)
    stored = build_job_config(_protocol(), archive, {})
    job = Job(id=11, config=stored)
    config = stored_evaluation_config(job)
    bound = run_config(config, Settings(device="cpu"), archive_folder=tmp_path)
    assert bound.anonymizer.archive == tmp_path and bound.training.device == "cpu"
    assert bound.model_dump(exclude={"anonymizer", "training"}) == config.model_dump(
        exclude={"anonymizer", "training"}
    )
    with pytest.raises(ConfigError, match="validated audio"):
        run_config(config, Settings())
    without = Job(id=12, config={k: v for k, v in stored.items() if k != "anonymizer"})
    with pytest.raises(InvalidInputError, match="names no anonymizer"):
        stored_evaluation_config(without)


def test_a_stored_config_meets_the_protocols_current_limits() -> None:
    """A re-run copies the stored config; limits lowered since the first job still apply."""
    builtin = _submission("builtin", builtin_name="pitch", builtin_params={})
    stored = build_job_config(_protocol(), builtin, {"training": {"epochs": 4}})
    check_stored_config_cost(stored, _protocol(), settings=Settings())  # within the defaults
    lowered = ProtocolRecord(
        id=3, name="p", version=2, body={"config": BASE, "limits": {"epochs": 3}}
    )
    with pytest.raises(
        CostLimitError, match=r"re-run.*training\.epochs: 4 is above the limit of 3"
    ):
        check_stored_config_cost(stored, lowered, settings=Settings(), source="re-run")
    with pytest.raises(CostLimitError, match="max_job_seeds".upper()):
        check_stored_config_cost(
            {**stored, "seeds": [0, 1, 2]}, _protocol(), settings=Settings(max_job_seeds=2)
        )
