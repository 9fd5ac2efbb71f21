"""Content-addressed stages: a stage's output folder is named by the hash of its inputs.

A stage is a plain function of serializable inputs that writes its artifacts into a folder. The
runner computes ``key = sha256(stage name, inputs)``; if ``<work>/<stage>/<key>/DONE`` exists the
stage is skipped and its recorded outputs are returned. Outputs are written into a temporary
folder that is renamed into place only when the stage succeeds, so a crash never leaves a
half-written result that a later run would trust. The same keys are what the Celery workers use.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DONE_FILE = "DONE.json"


def stage_key(stage: str, inputs: Mapping[str, Any]) -> str:
    """Hex sha256 of the stage name and its canonical-JSON inputs (first 16 hex digits)."""
    blob = json.dumps({"stage": stage, "inputs": inputs}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StageOutcome:
    """What a finished stage left behind: its folder, outputs and whether it was reused."""

    stage: str
    key: str
    folder: Path
    outputs: dict[str, Any]
    reused: bool
    seconds: float


class StageRunner:
    """Runs stages under ``work_dir``, skipping those already done with the same inputs."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log: list[StageOutcome] = []

    def folder(self, stage: str, key: str) -> Path:
        """The final folder of a stage run."""
        return self.work_dir / stage / key

    def run(
        self,
        stage: str,
        inputs: Mapping[str, Any],
        fn: Callable[[Path], dict[str, Any]],
        *,
        resumable: bool = False,
    ) -> StageOutcome:
        """Run ``fn(tmp_folder) -> outputs`` unless a finished run with equal inputs exists.

        ``outputs`` must be JSON-serializable; paths inside it should be relative to the folder.
        ``resumable`` stages (training) keep what a crashed run left in the temporary folder, so
        ``fn`` can continue from its own checkpoints; other stages start over in an empty one.
        """
        key = stage_key(stage, inputs)
        final = self.folder(stage, key)
        done = final / DONE_FILE
        if done.is_file():
            record = json.loads(done.read_text())
            outcome = StageOutcome(stage, key, final, record["outputs"], True, 0.0)
            self.log.append(outcome)
            return outcome
        tmp = final.with_name(final.name + ".tmp")
        if tmp.exists() and not resumable:
            shutil.rmtree(tmp)  # a previous crash mid-stage: start that stage over
        tmp.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        outputs = fn(tmp)
        seconds = time.perf_counter() - t0
        record = {
            "stage": stage,
            "key": key,
            "inputs": inputs,
            "outputs": outputs,
            "seconds": seconds,
        }
        (tmp / DONE_FILE).write_text(json.dumps(record, indent=2, sort_keys=True, default=str))
        if final.exists():  # a concurrent identical run finished first; theirs is as good
            shutil.rmtree(tmp)
        else:
            tmp.rename(final)
        outcome = StageOutcome(stage, key, final, outputs, False, seconds)
        self.log.append(outcome)
        return outcome
