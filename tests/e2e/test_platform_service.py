"""A service submission end to end through HTTP and a real Celery worker: the example server
(examples/service-anonymizer/, the built-in pitch behind HTTP) on loopback, a submission and a
job over the API, the worker calling the endpoint, the result on the leaderboard with the EER of
the built-in itself through the same seed."""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.configs import micro_protocol_config

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PARAMS = {"semitones": 4}
JOB_TIMEOUT_S = 600.0


def _ok(response: httpx.Response, *codes: int) -> dict[str, Any]:
    assert response.status_code in codes, f"{response.status_code}: {response.text[:800]}"
    body: dict[str, Any] = response.json()
    return body


def _finished_job(platform: Any, client: httpx.Client, job_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        job = _ok(client.get(f"/v1/jobs/{job_id}"), 200)
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.5)
    logs = "\n".join(platform.log_tail(name) for name in platform.workers)
    raise AssertionError(f"job {job_id} stuck: {job['state']}\n{logs}")


def _serve_example(sock: socket.socket, secret: str) -> Any:
    import uvicorn

    path = ROOT / "examples" / "service-anonymizer" / "server.py"
    spec = importlib.util.spec_from_file_location("service_anonymizer_example_e2e", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = module.create_app(secret, "pitch", PARAMS)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    return server


def _semi_informed_eer(client: httpx.Client, job_id: int) -> float:
    results = _ok(client.get(f"/v1/jobs/{job_id}/results"), 200)["results"]
    (value,) = [
        r["value"]
        for r in results
        if (r["metric"], r["scenario"], r["seed"]) == ("eer_percent", "semi-informed", -1)
    ]
    return float(value)


def test_a_service_submission_runs_to_the_leaderboard_like_its_builtin(
    e2e_platform: Any,
) -> None:
    admin = e2e_platform.client(e2e_platform.admin_token)
    _ok(admin.post("/v1/admin/teams", json={"slug": "served-lab"}), 201)
    token = _ok(
        admin.post("/v1/admin/tokens", json={"team": "served-lab", "scopes": ["submit", "read"]}),
        201,
    )["token"]
    config = micro_protocol_config(scenarios=["semi-informed"], backends=["cosine"])
    protocol = _ok(
        admin.post("/v1/admin/protocols", json={"name": "micro-service", "config": config}), 201
    )
    lab = e2e_platform.client(token)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    service = _ok(
        lab.post(
            "/v1/submissions",
            json={
                "kind": "service",
                "name": "pitch served",
                "visibility": "public",
                "service": {"url": url},
            },
        ),
        201,
    )
    builtin = _ok(
        lab.post(
            "/v1/submissions",
            json={
                "kind": "builtin",
                "name": "pitch local",
                "visibility": "public",
                "builtin": {"name": "pitch", "params": PARAMS},
            },
        ),
        201,
    )
    server = _serve_example(sock, service["service_secret"])
    try:
        jobs = {}
        for name, submission in (("service", service), ("builtin", builtin)):
            body = {"submission_id": submission["id"], "protocol_id": protocol["id"]}
            jobs[name] = _ok(lab.post("/v1/jobs", json=body), 201)["id"]
        for name, job_id in jobs.items():
            job = _finished_job(e2e_platform, lab, job_id)
            assert job["state"] == "succeeded", (name, job)
    finally:
        server.should_exit = True
        sock.close()
    assert _semi_informed_eer(lab, jobs["service"]) == _semi_informed_eer(lab, jobs["builtin"])
    board = _ok(lab.get(f"/v1/protocols/{protocol['id']}/leaderboard"), 200)
    assert {service["id"], builtin["id"]} <= {e["submission_id"] for e in board["entries"]}
