"""The deployment check (`make deploy-check`): build the images, start docker-compose.yml for real,
use it over HTTP, restart it, start API replicas together, tear it all down.

Steps (each named in a failure, with the container at fault):
  build     the platform image (deploy/Dockerfile) and the check's PostgreSQL, Redis and S3 images,
            on local base images made from Debian's packages (scripts/deploy_base_images.sh)
  up        docker-compose.yml + deploy/check/compose.check.yml, started in dependency order;
            waits for every health check and for the one-shots to exit 0
  use       team and tokens with the admin CLI inside the API container; a tiny protocol; the
            built-in pitch anonymizer submitted; the job run on the CPU worker; results, artifacts
            and the leaderboard (JSON and page) read over HTTP
  compare   the same job config run in-process here (CPU, same seeds): equal result rows
  backup    pg_dump restored into a fresh database, the bucket copied out and into a fresh one
  restart   down (volumes kept), up: team, submission, job, results and blobs still there
  replicas  two API containers started at once on a fresh database: the migrations run once
  down      containers, volumes and the network removed, even after a failure; the containers'
            logs are saved first and their paths printed

Podman with podman-compose here, Docker with `docker compose` elsewhere (--engine). Ports are
free loopback ports picked at start; nothing outside this machine is contacted.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
CHECK_DIR = REPO / "deploy" / "check"
COMPOSE_FILE = REPO / "docker-compose.yml"
CHECK_OVERRIDE = CHECK_DIR / "compose.check.yml"
WHEELHOUSE = Path(os.environ.get("UNMASK_WHEELHOUSE", "/var/cache/unmask-deploy/wheelhouse"))
APP_IMAGE = "localhost/unmask"
SERVICE_IMAGES = {
    "localhost/unmask-check-postgres:bookworm": "Containerfile.postgres",
    "localhost/unmask-check-redis:bookworm": "Containerfile.redis",
}
S3_IMAGE = "localhost/unmask-check-s3:bookworm"
PYTHON_BASE = "localhost/unmask-deploy-python:bookworm"
# The stack without the GPU worker (no GPU here): worker-cpu takes both queues.
INFRA = ("postgres", "redis", "minio")
ONE_SHOTS = ("create-bucket", "migrate")
PLATFORM = ("api", "worker-cpu", "worker-reaper", "beat")
HEALTHY = ("postgres", "redis", "minio", "api", "worker-cpu", "worker-reaper")
# The job's protocol: a tiny synthetic one (8 speakers, 1 training epoch, one back-end): the
# plumbing is under test, not the numbers. docs/deploy.md's walk-through posts the same file.
TINY_PROTOCOL_FILE = CHECK_DIR / "tiny-protocol.json"


class StepFailed(Exception):
    """A step of the check failed; ``container`` names the one at fault when there is one."""

    def __init__(self, step: str, message: str, container: str | None = None) -> None:
        self.step, self.container = step, container
        where = f" (container {container})" if container else ""
        super().__init__(f"step '{step}' failed{where}: {message}")


def log(message: str) -> None:
    print(f"[deploy-check {time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(cmd: list[str], *, check: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-3000:]}")
    return done


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def merge_compose(base: Any, override: Any) -> Any:
    """The Compose specification's merge: mappings merge key by key, anything else (commands,
    health-check tests) is replaced by the override. (podman-compose 1.0 concatenates lists,
    hence the merge is done here and podman-compose gets one file.)"""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = merge_compose(base[key], value) if key in base else value
        return merged
    return copy.deepcopy(override)


class Engine:
    """Podman + podman-compose, or Docker + `docker compose`, on one merged compose file."""

    def __init__(self, name: str, project: str, compose_file: Path, env: dict[str, str]) -> None:
        self.name, self.project, self.compose_file, self.env = name, project, compose_file, env

    def compose(self, *args: str) -> subprocess.CompletedProcess[str]:
        if self.name == "podman":
            cmd = ["podman-compose", "-p", self.project, "-f", str(self.compose_file), *args]
        else:
            cmd = ["docker", "compose", "-p", self.project, "-f", str(self.compose_file), *args]
        return run(cmd, env=self.env, cwd=REPO)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run([self.name, *args], check=check)

    def container(self, service: str) -> str:
        """The container of ``service`` (podman-compose and docker compose both name them so)."""
        sep = "_" if self.name == "podman" else "-"
        return f"{self.project}{sep}{service}{sep}1"

    def state(self, container: str) -> dict[str, Any]:
        done = self.cli("inspect", "--format", "{{json .State}}", container, check=False)
        if done.returncode != 0:
            return {"Status": "missing"}
        state: dict[str, Any] = json.loads(done.stdout)
        return state

    def healthy(self, container: str) -> bool:
        """Run the container's health check now (Podman without systemd has no timer for it)."""
        if self.name == "podman":
            return self.cli("healthcheck", "run", container, check=False).returncode == 0
        health = self.state(container).get("Health") or {}
        return health.get("Status") == "healthy"

    def logs(self, container: str) -> str:
        done = self.cli("logs", container, check=False)
        return done.stdout + done.stderr

    def project_containers(self) -> list[str]:
        done = self.cli(
            "ps", "-a", "--filter", f"label=com.docker.compose.project={self.project}",
            "--format", "{{.Names}}", check=False,
        )  # fmt: skip
        names = set(done.stdout.split())
        if self.name == "podman":
            done = self.cli(
                "ps", "-a", "--filter", f"label=io.podman.compose.project={self.project}",
                "--format", "{{.Names}}", check=False,
            )  # fmt: skip
            names |= set(done.stdout.split())
        return sorted(names)


class DeployCheck:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.run_id = time.strftime("%Y%m%d-%H%M%S")
        self.project = args.project
        self.log_dir = Path(args.log_dir) / self.run_id
        self.work = Path(tempfile.mkdtemp(prefix="unmask-deploy-check-"))
        self.api_port, self.s3_port = free_port(), free_port()
        self.env = {
            **os.environ,
            "UNMASK_IMAGE": APP_IMAGE,
            "UNMASK_VERSION": "latest",
            "UNMASK_API_PORT": str(self.api_port),
            "UNMASK_S3_PORT": str(self.s3_port),
            "UNMASK_PUBLIC_URL": f"http://127.0.0.1:{self.api_port}",
            "UNMASK_S3_PUBLIC_ENDPOINT_URL": f"http://127.0.0.1:{self.s3_port}",
            "UNMASK_TOKEN_HMAC_KEY": secrets.token_hex(32),
            "UNMASK_CPU_WORKER_QUEUES": "cpu,gpu",
        }
        self.engine = Engine(args.engine, self.project, self.work / "compose.yml", self.env)
        self.timings: dict[str, float] = {}
        self.current_step = "prepare"
        self.replicas: list[str] = []
        self.state: dict[str, Any] = {}

    # -- helpers ---------------------------------------------------------------------------------

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        log(f"step {name} ...")
        self.current_step = name
        start = time.monotonic()
        try:
            yield
        except StepFailed:
            raise
        except Exception as exc:
            raise StepFailed(name, f"{type(exc).__name__}: {exc}") from exc
        self.timings[name] = time.monotonic() - start
        log(f"step {name} done in {self.timings[name]:.0f} s")

    def write_compose(self) -> None:
        data = yaml.safe_load(COMPOSE_FILE.read_text())
        for extra in [CHECK_OVERRIDE, *self.args.override]:
            data = merge_compose(data, yaml.safe_load(Path(extra).read_text()))
        for service in data["services"].values():
            if "build" in service:  # the images are built by the check (step build)
                service["build"]["context"] = str(REPO)
            test = service.get("healthcheck", {}).get("test")
            if self.engine.name == "podman" and isinstance(test, list) and test[:1] == ["CMD"]:
                # podman-compose 1.0 quotes the arguments of a CMD list wrongly (an argument
                # with a space breaks the check); the same command as one shell line is safe.
                service["healthcheck"]["test"] = ["CMD-SHELL", shlex.join(test[1:])]
        self.engine.compose_file.write_text(yaml.safe_dump(data, sort_keys=False))

    def wait_services(
        self, step: str, healthy: tuple[str, ...], exits: tuple[str, ...] = ()
    ) -> None:
        """Every ``healthy`` service's check passes and every ``exits`` one-shot exits 0, within
        the timeout; else the step fails naming the first container that did not."""
        deadline = time.monotonic() + self.args.health_timeout
        pending_health = {self.engine.container(s) for s in healthy}
        pending_exit = {self.engine.container(s) for s in exits}
        while pending_health or pending_exit:
            for container in sorted(pending_exit):
                state = self.engine.state(container)
                if state.get("Status") == "exited":
                    if state.get("ExitCode") != 0:
                        raise StepFailed(step, f"exited {state.get('ExitCode')}", container)
                    pending_exit.discard(container)
            for container in sorted(pending_health):
                state = self.engine.state(container)
                if state.get("Status") in ("exited", "missing", "dead"):
                    raise StepFailed(
                        step, f"not running ({state.get('Status')}, exit {state.get('ExitCode')})",
                        container,
                    )  # fmt: skip
                if self.engine.healthy(container):
                    pending_health.discard(container)
            if time.monotonic() > deadline:
                late = sorted(pending_health | pending_exit)
                raise StepFailed(
                    step,
                    f"not healthy after {self.args.health_timeout:.0f} s: {', '.join(late)}",
                    late[0],
                )
            if pending_health or pending_exit:
                time.sleep(2)

    def compose_up(self, step: str) -> None:
        """docker compose's dependency order, done here: podman-compose 1.0 does not wait for
        `condition: service_healthy` / `service_completed_successfully`."""
        self.engine.compose("up", "-d", "--no-build", *INFRA)
        self.wait_services(step, INFRA)
        self.engine.compose("up", "-d", "--no-build", *ONE_SHOTS)
        self.wait_services(step, (), ONE_SHOTS)
        self.engine.compose("up", "-d", "--no-build", *PLATFORM)
        self.wait_services(step, HEALTHY)

    def http(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(
            base_url=f"http://127.0.0.1:{self.api_port}", headers=headers, timeout=30.0
        )

    def exec_api(self, *args: str) -> str:
        done = self.engine.cli("exec", self.engine.container("api"), *args, check=False)
        if done.returncode != 0:
            raise StepFailed(
                "use", f"{' '.join(args)}: {done.stderr.strip()}", self.engine.container("api")
            )
        return done.stdout

    # -- steps -----------------------------------------------------------------------------------

    def build_image(
        self, containerfile: Path, tag: str, context: Path, *build_args: str, wheels: bool = False
    ) -> None:
        """Podman: Docker's image format (OCI images drop HEALTHCHECK) and the wheelhouse mounted
        (no package index in the build); Docker: the Dockerfile's pip cache mount."""
        flags = [f"--build-arg={arg}" for arg in build_args]
        if self.engine.name == "podman":
            flags += ["--format", "docker"]
            if wheels:
                flags += ["-v", f"{WHEELHOUSE}:/wheelhouse:ro"]
                flags += ["--build-arg=WHEELHOUSE=/wheelhouse"]
        self.engine.cli("build", "-q", "-f", str(containerfile), "-t", tag, *flags, str(context))

    def build(self) -> None:
        start = time.monotonic()
        base = f"BASE_IMAGE={PYTHON_BASE}"
        self.build_image(REPO / "deploy" / "Dockerfile", f"{APP_IMAGE}:latest", REPO, base,
                         wheels=True)  # fmt: skip
        self.timings["build: platform image"] = time.monotonic() - start
        for image, containerfile in SERVICE_IMAGES.items():
            self.build_image(CHECK_DIR / containerfile, image, CHECK_DIR)
        self.build_image(CHECK_DIR / "Containerfile.s3", S3_IMAGE, REPO, wheels=True)
        for image in [f"{APP_IMAGE}:latest", *SERVICE_IMAGES, S3_IMAGE]:
            size = self.engine.cli("image", "inspect", "--format", "{{.Size}}", image).stdout
            log(f"image {image}: {int(size) / 1e9:.2f} GB")
            self.state.setdefault("image_sizes", {})[image] = int(size)

    def use(self) -> None:
        api = self.engine.container("api")
        self.exec_api("unmask", "admin", "create-team", "deploy-check")
        admin_out = self.exec_api(
            "unmask",
            "admin",
            "create-token",
            "--team",
            "deploy-check",
            "--scopes",
            "admin,submit,read",
            "--name",
            "deploy-check",
        )
        token = admin_out.strip().splitlines()[-1].strip()
        if not re.fullmatch(r"[A-Za-z0-9_\-\.]{20,}", token):
            raise StepFailed("use", f"admin CLI printed no token: {admin_out!r}", api)
        client = self.http(token)
        protocol_body = json.loads(TINY_PROTOCOL_FILE.read_text())
        protocol = ok(client.post("/v1/admin/protocols", json=protocol_body), 201)
        submission = ok(client.post("/v1/submissions", json={
            "kind": "builtin", "name": "pitch (deploy check)", "visibility": "public",
            "builtin": {"name": "pitch", "params": {}},
        }), 201)  # fmt: skip
        up_at = self.state["up_at"]
        job = ok(client.post("/v1/jobs", json={
            "submission_id": submission["id"], "protocol_id": protocol["id"],
        }, headers={"Idempotency-Key": f"deploy-check-{self.run_id}"}), 201)  # fmt: skip
        job = self.wait_job(client, job["id"])
        self.timings["up to finished job"] = time.monotonic() - up_at
        if job["state"] != "succeeded":
            raise StepFailed("use", f"job {job['id']} {job['state']}: {job.get('error')}",
                             self.engine.container("worker-cpu"))  # fmt: skip
        hosts = {s.get("worker_host") or "" for s in job["stages"]}
        if not all(h.startswith("cpu@") for h in hosts):
            raise StepFailed("use", f"stages ran on {hosts}, not the CPU worker")
        results = ok(client.get(f"/v1/jobs/{job['id']}/results"), 200)["results"]
        if not results:
            raise StepFailed("use", "the job has no results")
        board = ok(client.get(f"/v1/protocols/{protocol['id']}/leaderboard"), 200)
        if not any(e["job_id"] == job["id"] for e in board["entries"]):
            raise StepFailed("use", f"job {job['id']} is not on the leaderboard: {board}")
        page = client.get(f"/protocols/{protocol['id']}")
        if page.status_code != 200 or "pitch (deploy check)" not in page.text:
            raise StepFailed("use", f"leaderboard page: HTTP {page.status_code}")
        blobs = self.download_artifacts(client, job["id"])
        log(f"job {job['id']} succeeded: {len(results)} result rows, {len(blobs)} artifacts")
        self.state.update(token=token, protocol=protocol, submission=submission, job=job,
                          results=results, blobs=blobs)  # fmt: skip

    def wait_job(self, client: httpx.Client, job_id: int) -> dict[str, Any]:
        deadline = time.monotonic() + self.args.job_timeout
        while time.monotonic() < deadline:
            job = ok(client.get(f"/v1/jobs/{job_id}"), 200)
            if job["state"] in ("succeeded", "failed", "cancelled"):
                return job
            time.sleep(3)
        raise StepFailed("use", f"job {job_id} not finished after {self.args.job_timeout:.0f} s: "
                         f"{job['state']}", self.engine.container("worker-cpu"))  # fmt: skip

    def download_artifacts(self, client: httpx.Client, job_id: int) -> dict[str, str]:
        """sha256 of every artifact of the job, fetched from the bucket with the presigned links
        the API hands out (the S3 endpoint published on the host)."""
        items = ok(client.get(f"/v1/jobs/{job_id}/artifacts"), 200)["artifacts"]
        digests = {}
        for item in items:
            got = httpx.get(item["url"], headers=item.get("headers") or {}, timeout=30.0)
            if got.status_code != 200:
                raise StepFailed("use", f"artifact {item['key']}: HTTP {got.status_code}")
            digest = hashlib.sha256(got.content).hexdigest()
            if digest != item["sha256"]:
                raise StepFailed("use", f"artifact {item['key']}: sha256 differs from its record")
            digests[item["key"]] = digest
        return digests

    def compare(self) -> None:
        """The job's stored config run in-process here (CPU): the same result rows."""
        sys.path.insert(0, str(REPO))
        from services.platform.results.document import result_rows_from_document

        config = dict(self.state["job"]["config"])
        config.setdefault("training", {})["device"] = "cpu"
        path = self.work / "job-config.yaml"
        path.write_text(yaml.safe_dump(config))
        out = self.work / "in-process"
        env = {**os.environ, "PYTHONPATH": str(REPO), "UNMASK_DATA_DIR": str(self.work / "data")}
        done = run([sys.executable, "-m", "cli.main", "evaluate", str(path), "--out", str(out)],
                   check=False, env=env, cwd=REPO)  # fmt: skip
        if done.returncode != 0:
            raise StepFailed("compare", f"in-process run failed: {done.stderr[-2000:]}")
        document = json.loads((out / "results.json").read_text())
        local = [dataclasses.asdict(row) for row in result_rows_from_document(document)]
        mismatches = compare_rows(self.state["results"], local)
        if mismatches:
            raise StepFailed("compare", "stack and in-process results differ: "
                             + "; ".join(mismatches[:10]))  # fmt: skip
        log(f"in-process run: the same {len(local)} result rows as the stack")

    def backup(self) -> None:
        """docs/deploy.md's backup and restore: `pg_dump -Fc` restored with `pg_restore` into a
        fresh database (same rows), the bucket copied out and into a fresh bucket (same bytes)."""
        postgres = self.engine.container("postgres")
        dump = subprocess.run(
            [self.engine.name, "exec", postgres, "pg_dump", "-U", "unmask", "-Fc", "unmask"],
            capture_output=True, check=False,
        )  # fmt: skip
        if dump.returncode != 0 or not dump.stdout:
            raise StepFailed("backup", f"pg_dump: {dump.stderr.decode()[-500:]}", postgres)
        (self.work / "unmask.dump").write_bytes(dump.stdout)
        self.engine.cli("exec", postgres, "createdb", "-U", "unmask", "unmask_restored")
        restore = subprocess.run(
            [self.engine.name, "exec", "-i", postgres, "pg_restore", "-U", "unmask",
             "--no-owner", "-d", "unmask_restored"],
            input=dump.stdout, capture_output=True, check=False,
        )  # fmt: skip
        if restore.returncode != 0:
            raise StepFailed("backup", f"pg_restore: {restore.stderr.decode()[-500:]}", postgres)
        tables = ("teams", "api_tokens", "submissions", "jobs", "results", "artifacts")
        counts = "SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in tables)
        rows = [
            self.engine.cli(
                "exec", postgres, "psql", "-U", "unmask", "-d", db, "-tAc", counts
            ).stdout.strip()
            for db in ("unmask", "unmask_restored")
        ]
        if rows[0] != rows[1]:
            raise StepFailed("backup", f"restored rows differ: {rows[0]} vs {rows[1]}", postgres)
        s3 = self.s3_client()
        folder = self.work / "bucket-backup"
        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="unmask"):
            for item in page.get("Contents", []):
                path = folder / item["Key"]
                path.parent.mkdir(parents=True, exist_ok=True)
                s3.download_file("unmask", item["Key"], str(path))
                keys.append(item["Key"])
        s3.create_bucket(Bucket="unmask-restored")
        for key in keys:
            s3.upload_file(str(folder / key), "unmask-restored", key)
        for key in keys:
            a = s3.get_object(Bucket="unmask", Key=key)["Body"].read()
            b = s3.get_object(Bucket="unmask-restored", Key=key)["Body"].read()
            if hashlib.sha256(a).digest() != hashlib.sha256(b).digest():
                raise StepFailed("backup", f"restored object {key} differs")
        log(f"backup: database restored with the same rows ({rows[0]}), {len(keys)} objects "
            "copied out of the bucket and back into a fresh one")  # fmt: skip

    def s3_client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{self.s3_port}",
            aws_access_key_id=self.env.get("MINIO_ROOT_USER", "unmask"),
            aws_secret_access_key=self.env.get("MINIO_ROOT_PASSWORD", "unmask-secret"),
            region_name="us-east-1",
        )

    def restart(self) -> None:
        self.engine.compose("down")
        self.state["up_at"] = time.monotonic()
        self.compose_up("restart")
        client = self.http(self.state["token"])
        job_id = self.state["job"]["id"]
        job = ok(client.get(f"/v1/jobs/{job_id}"), 200)
        if job["state"] != "succeeded":
            raise StepFailed("restart", f"job {job_id} is {job['state']} after the restart")
        ok(client.get(f"/v1/submissions/{self.state['submission']['id']}"), 200)
        results = ok(client.get(f"/v1/jobs/{job_id}/results"), 200)["results"]
        if results != self.state["results"]:
            raise StepFailed("restart", "the job's results changed across the restart")
        blobs = self.download_artifacts(client, job_id)
        if blobs != self.state["blobs"]:
            raise StepFailed("restart", "artifacts differ after the restart",
                             self.engine.container("minio"))  # fmt: skip
        log("after the restart: team token, submission, job, results and blobs are all there")

    def replicas_step(self) -> None:
        postgres = self.engine.container("postgres")
        done = self.engine.cli(
            "exec", postgres, "psql", "-U", "unmask", "-d", "unmask", "-c",
            "CREATE DATABASE unmask_replicas", check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise StepFailed("replicas", done.stderr.strip(), postgres)
        network = self.engine.cli(
            "inspect",
            "--format",
            "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}",
            self.engine.container("api"),
        ).stdout.split()[0]
        env = dict(self.env_of(self.engine.container("api")))
        server = env["UNMASK_DATABASE_URL"].rsplit("/", 1)[0]
        env["UNMASK_DATABASE_URL"] = f"{server}/unmask_replicas"
        flags = [arg for key, value in env.items() if key.startswith("UNMASK_")
                 for arg in ("-e", f"{key}={value}")]  # fmt: skip
        names = [f"{self.project}-api-replica-{i}" for i in (1, 2)]
        self.replicas = names
        # Both at once: the race the migration lock is for.
        procs = [
            subprocess.Popen(
                [self.engine.name, "run", "-d", "--name", name, "--network", network, *flags,
                 f"{APP_IMAGE}:latest"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            for name in names
        ]  # fmt: skip
        for name, proc in zip(names, procs, strict=True):
            _, err = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise StepFailed("replicas", f"{self.engine.name} run: {err.strip()}", name)
        deadline = time.monotonic() + self.args.health_timeout
        pending = set(names)
        while pending:
            for name in sorted(pending):
                state = self.engine.state(name)
                if state.get("Status") != "running":
                    raise StepFailed("replicas", f"{state.get('Status')}, exit "
                                     f"{state.get('ExitCode')}", name)  # fmt: skip
                if self.engine.healthy(name):
                    pending.discard(name)
            if pending and time.monotonic() > deadline:
                raise StepFailed("replicas", "not healthy in time", sorted(pending)[0])
            time.sleep(2)
        applied = [self.engine.logs(name).count("Running upgrade") for name in names]
        revisions = len(list((REPO / "migrations" / "versions").glob("*.py")))
        if sorted(applied) != [0, revisions]:
            raise StepFailed("replicas", f"revisions applied per replica: {applied} "
                             f"(expected {revisions} by one, 0 by the other)")  # fmt: skip
        versions = self.engine.cli(
            "exec", postgres, "psql", "-U", "unmask", "-d", "unmask_replicas", "-tAc",
            "SELECT count(*) FROM alembic_version",
        ).stdout.strip()  # fmt: skip
        if versions != "1":
            raise StepFailed("replicas", f"alembic_version has {versions} rows", postgres)
        log(f"two replicas on a fresh database: revisions applied {applied}, both healthy")

    def env_of(self, container: str) -> Iterator[tuple[str, str]]:
        out = self.engine.cli("inspect", "--format", "{{json .Config.Env}}", container).stdout
        for item in json.loads(out):
            key, _, value = item.partition("=")
            yield key, value

    def down(self) -> None:
        """Save each container's log, then remove containers, volumes and the network."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        containers = self.engine.project_containers() + [
            r for r in self.replicas if self.engine.state(r).get("Status") != "missing"
        ]
        for container in containers:
            path = self.log_dir / f"{container}.log"
            path.write_text(self.engine.logs(container))
            log(f"log of {container}: {path}")
        for replica in self.replicas:
            self.engine.cli("rm", "-f", replica, check=False)
        try:
            self.engine.compose("down", "-v")
        except RuntimeError as exc:
            log(f"compose down: {exc}")
        # Whatever compose left (a half-made project): its containers, volumes and network.
        for container in self.engine.project_containers():
            self.engine.cli("rm", "-f", container, check=False)
        volumes = self.engine.cli("volume", "ls", "--format", "{{.Name}}", check=False).stdout
        for volume in volumes.split():
            if volume.startswith(f"{self.project}_"):
                self.engine.cli("volume", "rm", "-f", volume, check=False)
        self.engine.cli("network", "rm", "-f", f"{self.project}_default", check=False)
        shutil.rmtree(self.work, ignore_errors=True)

    def main(self) -> int:
        # Stopped from outside (Ctrl-C, `kill`, a CI timeout): tear down all the same. A shell
        # starts background jobs with SIGINT ignored, hence both handlers set here.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        start = time.monotonic()
        failure: StepFailed | None = None
        try:
            self.write_compose()
            if not self.args.skip_build:
                with self.step("build"):
                    self.build()
            with self.step("up"):
                self.state["up_at"] = time.monotonic()
                self.compose_up("up")
            if self.args.until != "up":
                with self.step("use"):
                    self.use()
                if not self.args.skip_compare:
                    with self.step("compare"):
                        self.compare()
                with self.step("backup"):
                    self.backup()
                with self.step("restart"):
                    self.restart()
                with self.step("replicas"):
                    self.replicas_step()
        except StepFailed as exc:
            failure = exc
        except KeyboardInterrupt:
            failure = StepFailed(self.current_step, "interrupted (SIGINT or SIGTERM)")
        finally:
            with self.step("down"):
                self.down()
        self.timings["total"] = time.monotonic() - start
        log("timings: " + ", ".join(f"{k} {v:.0f} s" for k, v in self.timings.items()))
        if failure is not None:
            print(f"deploy-check FAILED: {failure}", file=sys.stderr, flush=True)
            print(f"container logs: {self.log_dir}", file=sys.stderr, flush=True)
            return 1
        print("deploy-check passed", flush=True)
        return 0


def ok(response: httpx.Response, *codes: int) -> Any:
    if response.status_code not in codes:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path}: HTTP {response.status_code} "
            f"{response.text[:500]}"
        )
    return response.json()


def compare_rows(stack: list[dict[str, Any]], local: list[dict[str, Any]]) -> list[str]:
    """Differences between two lists of result rows, keyed by scenario/backend/seed/metric."""

    def key(row: dict[str, Any]) -> tuple[str, ...]:
        names = ("attacker", "scenario", "backend", "seed", "metric")
        return tuple(str(row.get(k, "baseline" if k == "attacker" else None)) for k in names)

    a, b = {key(r): r.get("value") for r in stack}, {key(r): r.get("value") for r in local}
    out = [f"{k} only in the stack" for k in a.keys() - b.keys()]
    out += [f"{k} only in-process" for k in b.keys() - a.keys()]
    out += [f"{k}: {a[k]} != {b[k]}" for k in a.keys() & b.keys() if not same(a[k], b[k])]
    return out


def same(x: Any, y: Any) -> bool:
    """Equal values; "not computed" (None or NaN, which the database stores as None) equals
    itself."""

    def missing(v: Any) -> bool:
        return v is None or (isinstance(v, float) and v != v)

    if missing(x) or missing(y):
        return missing(x) and missing(y)
    return bool(x == y)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("podman", "docker"),
                        default="podman" if shutil.which("podman") else "docker")  # fmt: skip
    parser.add_argument("--project", default="unmask-deploy-check")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        help="another compose override after deploy/check/compose.check.yml",
    )
    parser.add_argument("--health-timeout", type=float, default=300.0, help="seconds")
    parser.add_argument("--job-timeout", type=float, default=1200.0, help="seconds")
    parser.add_argument("--log-dir", default="/var/log/unmask-deploy")
    parser.add_argument("--skip-build", action="store_true", help="use the images already built")
    parser.add_argument("--skip-compare", action="store_true", help="no in-process run")
    parser.add_argument("--until", choices=("up",), help="stop after this step (then down)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(DeployCheck(parse_args()).main())
