"""The anonymizer contract is defined once; the runner and validator take settings as arguments."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.anonymizers import (
    archive,
    archive_members,
    archive_request,
    conformance,
    container,
    container_sandbox,
    contract,
)
from services.anonymizers.base import AnonymizationItem, TargetVoice
from services.anonymizers.container_sandbox import ContainerSandbox, SandboxLimits
from services.anonymizers.contract import ArchiveLimits
from services.audio import SAMPLE_RATE_HZ
from services.pipeline.config import parse_config
from services.pipeline.evaluation import EvaluationRun
from services.settings import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "container-contract.md"


@pytest.mark.parametrize(
    "module",
    [container, container_sandbox, archive, archive_members, archive_request, conformance],
)
def test_runner_and_validator_read_no_global_settings(module: Any) -> None:
    assert "get_settings" not in inspect.getsource(module)


def test_one_definition_of_the_contract() -> None:
    for name in ("CONTRACT_VERSION", "METADATA_NAME", "ArchiveLimits", "output_stem"):
        assert getattr(archive, name) is getattr(contract, name)
    assert archive_request.SET_NAMES is contract.SET_NAMES
    for name in ("JOB_FILE_NAME", "CONTAINER_INPUT_DIR", "EXIT_KILLED", "check_audio_file"):
        assert getattr(container, name) is getattr(contract, name)


def test_environment_and_job_file_follow_the_documented_contract() -> None:
    env = contract.container_environment(
        device="cpu", seed=3, batch_size=64, threads=2, with_targets=True
    )
    documented = DOCS.read_text()
    for variable in env:
        assert f"`{variable}`" in documented
    assert env["UNMASK_BATCH_SIZE"] == "16"  # a hint, at most 16
    assert env["UNMASK_JOB_FILE"] == "/unmask/input/job.json"
    assert "UNMASK_TARGETS_DIR" not in contract.container_environment(
        device="cpu", seed=3, batch_size=4, threads=1, with_targets=False
    )
    item = AnonymizationItem(
        utt_id="a/b",
        waveform=np.zeros(SAMPLE_RATE_HZ, dtype=np.float32),
        sample_rate=SAMPLE_RATE_HZ,
        source_speaker_id="s",
        source_gender="f",
        target=TargetVoice(target_id="t1", gender="m"),
    )
    job = contract.build_job([item], seed=5)
    assert job["contract_version"] == contract.CONTRACT_VERSION == 1
    (utt,) = job["utterances"]
    assert utt["output"] == f"{contract.output_stem('a/b')}.wav" != "a/b.wav"
    assert job["targets"]["t1"] == {"speaker_id": "t1", "gender": "m", "reference_dir": None}


def test_output_byte_bound_grows_with_the_duration_tolerance() -> None:
    lim = ArchiveLimits()
    # 8 bytes per sample of the longest allowed duration plus 64 KiB.
    assert lim.max_audio_bytes(10.0) == int(10.1 * SAMPLE_RATE_HZ * 8) + 65536
    assert lim.max_audio_bytes(100.0) == int(101.0 * SAMPLE_RATE_HZ * 8) + 65536


def test_limits_and_sandbox_come_from_the_given_settings() -> None:
    settings = Settings(
        container_engine_url="unix:///tmp/engine.sock",
        container_pull=False,
        container_memory_mb=300,
        container_shard_size=5,
        archive_max_members=7,
    )
    sandbox = ContainerSandbox.from_settings(settings)
    assert sandbox.engine_url == "unix:///tmp/engine.sock"
    assert sandbox.pull is False
    assert sandbox.limits == SandboxLimits.from_settings(settings)
    assert (sandbox.limits.memory_mb, sandbox.limits.shard_size) == (300, 5)
    assert ArchiveLimits.from_settings(settings).max_members == 7


def test_the_pipeline_hands_its_sandbox_to_the_container_anonymizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    class Stop(Exception):
        pass

    def build(config: Any, ctx: Any) -> Any:
        seen.update(ctx.sandbox_options, kind=config.kind, gpu=ctx.gpu)
        raise Stop

    monkeypatch.setattr("services.pipeline.stages.anonymize.build_runner", build)
    cfg = parse_config(
        {
            "synthetic": {
                "n_speakers": 12,
                "utts_per_speaker": 4,
                "n_attacker_train_speakers": 6,
                "n_eval_speakers": 4,
                "n_target_speakers": 2,
                "enrollments_per_speaker": 1,
                "trials_per_speaker": 1,
                "min_duration_s": 2.0,
                "max_duration_s": 2.1,
            },
            "anonymizer": {"kind": "container", "image": "example@sha256:" + "0" * 64},
            "training": {"device": "cpu"},
        }
    )
    limits = SandboxLimits(memory_mb=99, shard_size=3)
    sandbox = ContainerSandbox(engine_url="unix:///tmp/x.sock", pull=False, limits=limits)
    run = EvaluationRun(cfg, tmp_path, sandbox=sandbox)
    with pytest.raises(Stop):
        run.run(stop_after="anonymize")
    assert seen["kind"] == "container"
    assert (seen["engine_url"], seen["pull"], seen["limits"]) == (
        "unix:///tmp/x.sock",
        False,
        limits,
    )
    assert seen["gpu"] is False
