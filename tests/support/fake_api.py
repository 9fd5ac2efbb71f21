"""The Unmask API as the command-line tests fake it: the JSON of a job as ``GET /v1/jobs/{id}``
answers it, a protocol and a submission, and an ``httpx.MockTransport`` handler that plays a
job's polls. One fake for both CI gates (``unmask submit``, cli/submit.py, and the
``unmask-client``'s ``unmask-submit``, unmask_client/submit.py) and the client wrapper, so that
a change of the job schema is made here once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

Handler = Callable[[httpx.Request], httpx.Response]

PROTOCOL: dict[str, Any] = {"id": 1, "name": "p", "version": 1}
SUBMISSION: dict[str, Any] = {"id": 2, "name": "sub"}
JOB_ID = 5
"""The job :func:`polled_job` creates and answers."""


def job_json(
    job_id: int,
    state: str,
    *,
    heartbeat: str | None = None,
    error_message: str | None = None,
) -> dict[str, Any]:
    """A job in ``state`` as ``GET /v1/jobs/{id}`` answers it: one training stage in the same
    state (its heartbeat ``heartbeat``), half done."""
    stage = {
        "id": 1, "name": "train", "position": 0, "state": state, "progress": 0.5,
        "attempts": 1, "worker_host": "w", "heartbeat_at": heartbeat, "started_at": None,
        "finished_at": None, "error": None, "log_tail": "",
    }  # fmt: skip
    return {
        "id": job_id, "submission_id": 1, "protocol_id": 1, "state": state, "progress": 0.5,
        "config": {}, "config_hash": "0" * 64, "team_slug": "lab", "error_message": error_message,
        "created_at": "2026-01-01T00:00:00Z",
        "started_at": None, "finished_at": None, "stages": [stage], "charged": True,
        "evaluator": None, "phase": None, "cost": None,
    }  # fmt: skip


def polled_job(state: str, *, polls: int = 50) -> Handler:
    """A handler: a POST creates job :data:`JOB_ID` (201, queued); each GET answers it in
    ``state`` for ``polls`` polls, then failed (a wait that never ends is not waited for in a
    test). A failed job says ``boom``."""
    left = iter(range(polls))

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(201, json=job_json(JOB_ID, "queued"))
        now = state if next(left, None) is not None else "failed"
        return httpx.Response(200, json=job_json(JOB_ID, now, error_message="boom"))

    return handler
