"""Processes that race on the same stage keys through one S3 bucket (spawned by the tests).

Each racer is a separate process with its own stage folder (a host of its own): per round it
waits at a barrier with the other racers, then runs the round's stage through a
:class:`SyncedStageRunner`. The stage writes a file whose bytes depend on the process (pid and
random bytes), so two racers that both compute it publish different folders: only a race-safe
publish leaves every host with one consistent copy.
"""

from __future__ import annotations

import json
import os
import random
import time
import traceback
from pathlib import Path
from typing import Any

from services.pipeline.stage_claims import HostClaims, StageClaims
from services.pipeline.stage_runner import stage_folder_problem
from services.pipeline.workspace import StageWorkspace, SyncedStageRunner
from services.storage.blob_s3 import S3BlobStore
from support.s3 import moto_s3_client

RACE_STAGE = "race"


def race_inputs(round_number: int, tag: str) -> dict[str, Any]:
    """The inputs of one round's stage (``tag`` keeps test runs apart)."""
    return {"round": round_number, "tag": tag}


def _store(endpoint: str, bucket: str) -> S3BlobStore:
    return S3BlobStore(bucket, client=moto_s3_client(endpoint), create_bucket=False)


def _claims(database_url: str | None) -> StageClaims:
    if database_url is None:
        return HostClaims()
    from services.platform.jobs.stage_claims import DatabaseStageClaims
    from services.storage.db import Database

    return DatabaseStageClaims(
        Database(database_url), lease_s=30.0, heartbeat_s=1.0, poll_max_s=0.2
    )


def _compute(folder: Path) -> dict[str, Any]:
    time.sleep(random.uniform(0.0, 0.05))  # vary who finishes first
    (folder / "audio").mkdir()
    for i in range(3):
        (folder / "audio" / f"{i}.wav").write_bytes(bytes([i]) * 2000)
    # Not deterministic on purpose: which copy is published must not matter to correctness.
    (folder / "made_by.txt").write_text(f"{os.getpid()} {random.random()}\n")
    return {"made_by": "made_by.txt", "pid": os.getpid()}


def racer(
    endpoint: str,
    bucket: str,
    stages_dir: str,
    rounds: int,
    tag: str,
    barrier: Any,
    database_url: str | None,
    report_path: str,
) -> None:
    """Run ``rounds`` stages in step with the other racers; write what happened as JSON."""
    store = _store(endpoint, bucket)
    claims = _claims(database_url)
    report: list[dict[str, Any]] = []
    for number in range(rounds):
        runner = SyncedStageRunner(
            Path(stages_dir), StageWorkspace(store, Path(stages_dir)), claims=claims
        )
        barrier.wait(timeout=60)
        try:
            outcome = runner.run(RACE_STAGE, race_inputs(number, tag), _compute)
            report.append(
                {
                    "round": number,
                    "ok": True,
                    "key": outcome.key,
                    "computed": not outcome.reused,
                    "outputs": outcome.outputs,
                    "transfers": [t.direction for t in runner.transfers],
                    "problem": stage_folder_problem(outcome.folder, check_sha256=True),
                }
            )
        except Exception:
            report.append({"round": number, "ok": False, "error": traceback.format_exc()})
    Path(report_path).write_text(json.dumps(report))


def reader(endpoint: str, bucket: str, stages_dir: str, keys: list[str], report_path: str) -> None:
    """Download every published stage into a fresh folder and check it in full."""
    store = _store(endpoint, bucket)
    workspace = StageWorkspace(store, Path(stages_dir))
    report = []
    for key in keys:
        try:
            transfer = workspace.download(RACE_STAGE, key)
            folder = workspace.local_folder(RACE_STAGE, key)
            problem = stage_folder_problem(folder, check_sha256=True)
            report.append({"key": key, "direction": transfer.direction, "problem": problem})
        except Exception:
            report.append({"key": key, "direction": "error", "problem": traceback.format_exc()})
    Path(report_path).write_text(json.dumps(report))
