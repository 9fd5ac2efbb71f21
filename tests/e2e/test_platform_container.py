"""A container submission end to end over HTTP with a real worker process.

The example anonymizer image (examples/anonymizer-container/) is built on the Podman base image
of the sandbox tests (tests/integration/test_containers_sandbox.py, scripts/ensure_podman.sh),
pinned by digest, submitted as ``kind: container`` and evaluated on a tiny synthetic protocol by
the same job pipeline as built-ins: the worker subprocess runs every phase and reaches Podman
through ``UNMASK_CONTAINER_ENGINE_URL`` (tests/e2e/conftest.py). A second image that exits
non-zero must fail its job with an error naming the exit and the container's log tail.

Image tags differ from the sandbox tests' so the two modules never rebuild each other's images.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.anonymizers.container_sandbox import engine_client, resolve_image_digest
from services.pipeline.phases import PHASES
from services.platform import results as result_records
from services.platform.jobs import records as job_records
from support.configs import tiny_protocol_config
from support.s3 import moto_s3_client

pytestmark = [pytest.mark.e2e, pytest.mark.containers, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
# The same socket and base image as the sandbox tests (and the worker's engine URL in conftest).
SOCKET = os.environ.get("UNMASK_PODMAN_SOCKET", "/run/unmask-podman.sock")
ENGINE_URL = f"unix://{SOCKET}"
BASE_IMAGE = os.environ.get("UNMASK_TEST_BASE_IMAGE", "localhost/unmask-test-base:bookworm")
EXAMPLE_TAG = "localhost/unmask-e2e-example:latest"
FAILING_TAG = "localhost/unmask-e2e-exit:latest"
BUCKET = "unmask-e2e"
SHARD_SIZE = 16  # UNMASK_CONTAINER_SHARD_SIZE of the e2e workers
JOB_TIMEOUT_S = 900.0

# The tiny protocol of tests/e2e/test_platform_jobs.py: 12 speakers, 6 utterances each, the
# tiny recognizer for 1 epoch (the corpus and original-speech stages are shared with that module).
TINY_PROTOCOL: dict[str, Any] = tiny_protocol_config()


def _podman(*args: str) -> str:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


@pytest.fixture(scope="module")
def pinned_images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The example and an always-failing image, built on the test base and pinned by digest."""
    if os.geteuid() != 0:
        pytest.skip("container tests need root (rootful Podman with runc)")
    setup = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure_podman.sh")], capture_output=True, text=True
    )
    if setup.returncode != 0:
        pytest.skip(f"Podman is not available (scripts/ensure_podman.sh): {setup.stderr[-1500:]}")
    _podman(
        "build", "-q", "--build-arg", f"BASE={BASE_IMAGE}", "-t", EXAMPLE_TAG,
        str(REPO / "examples" / "anonymizer-container"),
    )  # fmt: skip
    # The sandbox tests' misbehaving entrypoint in its "exit" mode: a message on stderr, exit 3.
    ctx = tmp_path_factory.mktemp("failing-image")
    (ctx / "misbehave.py").write_bytes(
        (REPO / "tests" / "integration" / "container_images" / "misbehave.py").read_bytes()
    )
    (ctx / "Containerfile").write_text(
        f"FROM {BASE_IMAGE}\nCOPY misbehave.py /opt/misbehave.py\n"
        'ENTRYPOINT ["python3", "/opt/misbehave.py", "exit"]\n'
    )
    _podman("build", "-q", "-t", FAILING_TAG, str(ctx))
    client = engine_client(ENGINE_URL)
    pinned = {
        name: resolve_image_digest(tag, client=client, pull=False)
        for name, tag in (("example", EXAMPLE_TAG), ("failing", FAILING_TAG))
    }
    # Podman gives locally built images a repository digest: name@sha256:<64 hex>, which is
    # what a submission must carry.
    assert pinned["example"].startswith("localhost/unmask-e2e-example@sha256:")
    assert pinned["failing"].startswith("localhost/unmask-e2e-exit@sha256:")
    return pinned


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
    raise AssertionError(f"job {job_id} stuck: {job['state']} {job['stages']}\n{logs}")


@pytest.fixture(scope="module")
def team(e2e_platform: Any) -> Iterator[dict[str, Any]]:
    """A team with a submit/read token and the tiny protocol (names unique to this module)."""
    admin = e2e_platform.client(e2e_platform.admin_token)
    _ok(admin.post("/v1/admin/teams", json={"slug": "container-team"}), 201)
    issued = admin.post(
        "/v1/admin/tokens", json={"team": "container-team", "scopes": ["submit", "read"]}
    )
    client = e2e_platform.client(_ok(issued, 201)["token"])
    protocol = _ok(
        admin.post(
            "/v1/admin/protocols", json={"name": "tiny-container-e2e", "config": TINY_PROTOCOL}
        ),
        201,
    )
    yield {"client": client, "protocol": protocol}
    client.close()
    admin.close()


def _run_container_job(
    platform: Any, team: dict[str, Any], image: str, key: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Submit ``image`` (pinned) over HTTP, create a job, wait for it: (submission, job)."""
    client = team["client"]
    submission = _ok(
        client.post(
            "/v1/submissions",
            json={"kind": "container", "name": key, "container": {"image": image}},
        ),
        201,
    )
    assert submission["kind"] == "container" and submission["container_image"] == image
    body = {"submission_id": submission["id"], "protocol_id": team["protocol"]["id"]}
    job = _ok(client.post("/v1/jobs", json=body, headers={"Idempotency-Key": key}), 201)
    return submission, _finished_job(platform, client, job["id"])


def _stage_file(s3: Any, index_key: str, relative: str) -> Any:
    """A JSON file of an uploaded stage folder, found through the folder's INDEX.json."""
    index = json.loads(s3.get_object(Bucket=BUCKET, Key=index_key)["Body"].read())
    entry = next((e for e in index["files"] if e["path"] == relative), None)
    assert entry is not None, (
        f"{relative} not in {index_key}: {[e['path'] for e in index['files']]}"
    )
    return json.loads(s3.get_object(Bucket=BUCKET, Key=entry["key"])["Body"].read())


def test_container_submission_runs_every_phase_in_the_worker(
    e2e_platform: Any, team: dict[str, Any], pinned_images: dict[str, str]
) -> None:
    image = pinned_images["example"]
    submission, job = _run_container_job(e2e_platform, team, image, "container-e2e-ok")
    assert job["state"] == "succeeded", (job, e2e_platform.log_tail("worker1"))
    assert [s["name"] for s in job["stages"]] == list(PHASES)
    assert {s["state"] for s in job["stages"]} == {"succeeded"}
    assert job["submission_id"] == submission["id"]
    spec = job["config"]["anonymizer"]
    assert (spec["kind"], spec["image"]) == ("container", image)

    # Results: rows in PostgreSQL, the same through the API, EERs of the anonymized scenarios.
    client = team["client"]
    results = _ok(client.get(f"/v1/jobs/{job['id']}/results"), 200)["results"]
    with e2e_platform.database.session_scope() as session:
        rows = [
            (r.scenario, r.backend, r.seed, r.metric)
            for r in result_records.list_results(session, job["id"])
        ]
        stage_keys = {
            s.name: dict(s.artifact_keys) for s in job_records.get_job(session, job["id"]).stages
        }
    assert len(rows) == len(results) == len(set(rows)) > 0
    eer = {(r["scenario"], r["seed"]): r["value"] for r in results if r["metric"] == "eer_percent"}
    assert {("original", 0), ("ignorant", 0), ("semi-informed", 0)} <= set(eer)
    assert all(0.0 <= v <= 100.0 for v in eer.values())

    # Artifacts: objects in S3 with the recorded size and sha256.
    s3 = moto_s3_client(e2e_platform.s3_endpoint)
    keys = set()
    for item in _ok(client.get(f"/v1/jobs/{job['id']}/artifacts"), 200)["artifacts"]:
        head = s3.head_object(Bucket=BUCKET, Key=item["key"])
        assert head["ContentLength"] == item["size_bytes"]
        assert head["Metadata"]["sha256"] == item["sha256"]
        keys.add(item["key"])
    assert f"jobs/{job['id']}/results.json" in keys

    # The anonymized audio came from the container: each anonymize stage (one per set) was run
    # by the pinned image in shards of SHARD_SIZE, every run exited 0 and printed the example's
    # log, and its metadata.json (the pitch shift per utterance) covers exactly the set.
    anonymize = stage_keys["anonymize"]
    assert len(anonymize) == 4, anonymize  # train, validation, enrollment, trial
    n_runs = 0
    for index_key in anonymize.values():
        sidecar = _stage_file(s3, index_key, "audio/anonymization.json")
        record = _stage_file(s3, index_key, "container-runs.json")
        assert sidecar["config"]["name"] == "container" and sidecar["config"]["image"] == image
        assert record["image"] == image
        utterances = set(sidecar["files"])
        runs = record["runs"]
        assert len(runs) == math.ceil(len(utterances) / SHARD_SIZE)
        assert sum(r["n_utterances"] for r in runs) == len(utterances)
        assert all(r["exit_code"] == 0 and r["error"] is None for r in runs)
        assert all("example-pitch: done" in r["log_tail"] for r in runs)
        shifts = {u: m["semitones"] for r in runs for u, m in r["metadata"]["utterances"].items()}
        assert set(shifts) == utterances
        assert all(2.75 <= abs(s) <= 11.0 for s in shifts.values())
        n_runs += len(runs)
    assert n_runs >= 5  # the 36 training utterances alone take 3 runs


def test_container_that_exits_non_zero_fails_the_job_with_its_log(
    e2e_platform: Any, team: dict[str, Any], pinned_images: dict[str, str]
) -> None:
    image = pinned_images["failing"]
    _, job = _run_container_job(e2e_platform, team, image, "container-e2e-exit")
    assert job["state"] == "failed", job
    error = job["error_message"] or ""
    assert f"{image}: exited with code 3" in error
    assert "container log (tail)" in error and "model weights not found" in error
    stages = {s["name"]: s for s in job["stages"]}
    assert stages["corpus"]["state"] == "succeeded"
    assert stages["anonymize"]["state"] == "failed"
    assert "model weights not found" in (stages["anonymize"]["error"] or "")
    # Nothing ran after the failed phase and the job has no results.
    later = PHASES[PHASES.index("anonymize") + 1 :]
    assert all(stages[p]["state"] in ("queued", "cancelled") for p in later), stages
    assert _ok(team["client"].get(f"/v1/jobs/{job['id']}/results"), 200)["results"] == []
    # The worker survived the failure and is still serving.
    assert all(w.poll() is None for w in e2e_platform.workers.values())
