"""Two worker processes (separate data folders: two "hosts" sharing only PostgreSQL, Redis and
S3) run the same job twice and a rerun of it, all started at the same moment: every job
succeeds, each stage key is computed once (its ``stage_claims`` row), and the results equal a
one-worker run of the same config in this process.
"""

from __future__ import annotations

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from services.platform import results as result_records
from services.platform.jobs import records as job_records
from services.platform.jobs.config import run_config, stored_evaluation_config
from services.platform.results.document import result_rows_from_document
from services.settings import Settings
from services.storage.models import StageClaim
from support.configs import micro_protocol_config
from support.workers import stop_process

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

JOB_TIMEOUT_S = 900.0


def _ok(response: httpx.Response, *codes: int) -> dict[str, Any]:
    assert response.status_code in codes, f"{response.status_code}: {response.text[:800]}"
    body: dict[str, Any] = response.json()
    return body


def _wait_finished(platform: Any, client: httpx.Client, job_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        job = _ok(client.get(f"/v1/jobs/{job_id}"), 200)
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.5)
    logs = "\n".join(platform.log_tail(name) for name in platform.workers)
    raise AssertionError(f"job {job_id} stuck: {job['state']} {job['stages']}\n{logs}")


def _values(rows: list[Any]) -> dict[tuple[str, str, int, str], float | None]:
    return {(r.scenario, r.backend, r.seed, r.metric): r.value for r in rows}


def _same(a: dict[Any, float | None], b: dict[Any, float | None]) -> bool:
    def equal(x: float | None, y: float | None) -> bool:
        if x is None or y is None or math.isnan(x) or math.isnan(y):
            return (x is None or math.isnan(x)) and (y is None or math.isnan(y))
        return x == y

    return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)


def test_same_job_twice_and_a_rerun_on_two_workers_compute_each_stage_once(
    e2e_platform: Any, tmp_path: Path
) -> None:
    admin = e2e_platform.client(e2e_platform.admin_token)
    _ok(admin.post("/v1/admin/teams", json={"slug": "scale-team"}), 201)
    issued = admin.post(
        "/v1/admin/tokens", json={"team": "scale-team", "scopes": ["submit", "read"]}
    )
    client = e2e_platform.client(_ok(issued, 201)["token"])
    # A protocol of its own, so no stage of it exists yet: every stage is computed here.
    config = micro_protocol_config(backends=["cosine"], metrics={"bootstrap_resamples": 10})
    protocol = _ok(
        admin.post("/v1/admin/protocols", json={"name": "scale-e2e", "config": config}), 201
    )
    submission = _ok(
        client.post(
            "/v1/submissions",
            json={
                "kind": "builtin",
                "name": "pitch scale-out",
                "visibility": "private",
                "builtin": {"name": "pitch", "params": {}},
            },
        ),
        201,
    )
    # Two fresh hosts only (the session's other workers stop here).
    for name in list(e2e_platform.workers):
        stop_process(e2e_platform.workers.pop(name))
    for name in ("scale1", "scale2"):
        e2e_platform.start_worker(name)
    body = {"submission_id": submission["id"], "protocol_id": protocol["id"]}
    first = _ok(client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "scale-1"}), 201)

    def second() -> dict[str, Any]:
        return _ok(client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "scale-2"}), 201)

    def rerun() -> dict[str, Any]:
        return _ok(client.post(f"/v1/jobs/{first['id']}/rerun"), 201)

    with ThreadPoolExecutor(max_workers=2) as pool:
        others = [f.result() for f in [pool.submit(second), pool.submit(rerun)]]
    job_ids = [first["id"], *(job["id"] for job in others)]
    assert len(set(job_ids)) == 3
    jobs = [_wait_finished(e2e_platform, client, job_id) for job_id in job_ids]
    assert [job["state"] for job in jobs] == ["succeeded"] * 3, [j["stages"] for j in jobs]

    database = e2e_platform.database
    stage_keys: list[set[tuple[str, str]]] = []
    with database.session_scope() as session:
        for job_id in job_ids:
            keys = set()
            for stage in job_records.get_job(session, job_id).stages:
                for name in stage.artifact_keys:
                    if "/" in name:  # "<stage>/<key>" of a stage folder (the rest: reports)
                        stage_name, key = name.split("/", 1)
                        keys.add((stage_name, key))
            stage_keys.append(keys)
        assert stage_keys[0] and stage_keys[0] == stage_keys[1] == stage_keys[2]
        claims = {
            (c.stage, c.key): c
            for c in session.scalars(select(StageClaim)).all()
            if (c.stage, c.key) in stage_keys[0]
        }
        # Every stage the phases ran has a claim row: published, computed exactly once.
        assert set(claims) == stage_keys[0]
        twice = {k: (c.state, c.computations) for k, c in claims.items() if c.computations != 1}
        assert not twice, f"computed more than once: {twice}"
        assert {c.state for c in claims.values()} == {"published"}
        results = [_values(result_records.list_results(session, job_id)) for job_id in job_ids]
        stored = job_records.get_job(session, job_ids[0])
        reference_config = run_config(stored_evaluation_config(stored), Settings(device="cpu"))
    assert results[0] and _same(results[0], results[1]) and _same(results[0], results[2])

    # One worker: the same config run in this process (no database, no blob store).
    import torch

    from services.pipeline.evaluation import EvaluationRun

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the workers (UNMASK_NUM_THREADS=1)
    try:
        run = EvaluationRun(reference_config, tmp_path / "one-worker", cache_dir=tmp_path / "c")
        run.run()
    finally:
        torch.set_num_threads(threads)
    document = json.loads((tmp_path / "one-worker" / "results.json").read_text())
    reference = _values(result_rows_from_document(document))
    assert _same(results[0], reference)
