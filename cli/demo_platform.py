"""`unmask demo` on the platform stack, embedded: API + Celery worker + SQLite + local blobs.

What it does (everything a user of the platform does, on one machine, no servers to install):

1. picks an embedded state folder (``<out>/platform``: SQLite database, local blob store,
   filesystem Celery broker, the worker's stage cache) and migrates the database;
2. starts the HTTP API (uvicorn, in a thread, on a free loopback port) and one Celery worker
   (a subprocess, solo pool, consuming both queues from the filesystem broker);
3. bootstraps an admin token in the database (what an operator does once), then over HTTP:
   creates a team and its token, registers the demo protocol (``demo_config()`` without its
   anonymizer), submits the built-in pitch anonymizer and starts a job;
4. shows the job's stages progressing (polling ``GET /v1/jobs/{id}``), prints the result table
   (``GET /v1/jobs/{id}/results``) and the leaderboard JSON
   (``GET /v1/protocols/{id}/leaderboard``); stops the worker and the API.

``run_platform_demo(out)`` returns the process exit code (0 when the job succeeded).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from cli.progress import PlainProgress, stdout_console
from cli.result_table import rows_table
from cli.verdict import print_verdict
from services.vocab import TERMINAL_STATE_VALUES, RunState

if TYPE_CHECKING:
    from services.pipeline.config import EvaluationConfig

console = Console(stderr=True)
# Piped output (logs, tests) gets a fixed width that fits the result table uncut.
out_console = stdout_console()

DEMO_TEAM = "demo-lab"
DEMO_PROTOCOL = "demo-synthetic"
DEMO_SUBMISSION_NAME = "pitch (built-in)"
JOB_TIMEOUT_S = 30 * 60.0
POLL_INTERVAL_S = 1.0


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def embedded_environment(state_dir: Path, *, api_port: int) -> dict[str, str]:
    """``UNMASK_*`` variables of the embedded platform (SQLite, local blobs, filesystem broker)."""
    state = state_dir.resolve()
    return {
        "UNMASK_DATA_DIR": str(state),
        "UNMASK_DATABASE_URL": f"sqlite:///{state / 'unmask.db'}",
        "UNMASK_BLOB_BACKEND": "local",
        "UNMASK_BLOB_DIR": str(state / "blobs"),
        "UNMASK_BROKER_URL": "",
        "UNMASK_RESULT_BACKEND": "",
        "UNMASK_CELERY_EAGER": "0",
        "UNMASK_API_HOST": "127.0.0.1",
        "UNMASK_API_PORT": str(api_port),
        "UNMASK_PUBLIC_URL": f"http://127.0.0.1:{api_port}",
        "UNMASK_HEARTBEAT_INTERVAL_S": "2",
    }


class ApiServer:
    """The FastAPI app under uvicorn in a daemon thread (stopped with :meth:`stop`)."""

    def __init__(self, port: int) -> None:
        import uvicorn

        from api.app import create_app

        config = uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="unmask-api", daemon=True)
        self.url = f"http://127.0.0.1:{port}"

    def start(self, timeout_s: float = 60.0) -> ApiServer:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_worker(
    env: dict[str, str], log_path: Path, *, name: str = "demo"
) -> subprocess.Popen[bytes]:
    """A Celery worker subprocess on both queues (solo pool), logging to ``log_path``."""
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.app",
        "worker",
        "-Q",
        "gpu,cpu",
        "--pool",
        "solo",
        "--concurrency",
        "1",
        "-n",
        f"{name}@%h",
        "--loglevel",
        "INFO",
    ]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_file = open(log_path, "ab")
    return subprocess.Popen(
        command,
        env={**os.environ, **env},
        stdout=log_file,
        stderr=subprocess.STDOUT,
        cwd=Path(__file__).resolve().parents[1],
    )


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = 15.0) -> None:
    """Stop a child we started: SIGTERM (warm shutdown), then SIGKILL."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout_s)


def bootstrap_admin_token(database_url: str, hmac_key: str) -> str:
    """An admin token issued straight in the database (the operator's one-time step)."""
    from services.platform import identity
    from services.storage.db import Database
    from services.storage.errors import NotFoundError

    database = Database(database_url)
    try:
        with database.session_scope() as session:
            try:
                team = identity.get_team_by_slug(session, "operators")
            except NotFoundError:
                team = identity.create_team(session, "operators", "Platform operators")
            issued = identity.issue_team_token(
                session, team.slug, hmac_key=hmac_key, scopes=["admin"], name="demo bootstrap"
            )
            return issued.plaintext
    finally:
        database.dispose()


def _check(response: Any, *expected: int) -> dict[str, Any]:
    if response.status_code not in expected:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path} answered"
            f" {response.status_code}: {response.text[:500]}"
        )
    body: dict[str, Any] = response.json()
    return body


def demo_protocol_config(config: EvaluationConfig | None = None) -> dict[str, Any]:
    """The demo evaluation config (default ``demo_config()``) without its anonymizer (that
    comes from the submission) and name (each job is named after its submission)."""
    from services.pipeline.config import demo_config

    cfg = config if config is not None else demo_config()
    body: dict[str, Any] = cfg.model_dump(mode="json", exclude={"anonymizer", "protocol", "name"})
    return body


@contextlib.contextmanager
def embedded_platform(state_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """API thread + worker subprocess on the embedded state folder; yields (API URL, worker)."""
    from services.settings import get_settings
    from services.storage.migrate import upgrade_database
    from workers.app import (
        app,
        configure_app,
        install_outbox_senders,
        start_outbox_relay,
        start_reaper_thread,
    )

    port = free_port()
    env = embedded_environment(state_dir, api_port=port)
    os.environ.update(env)
    get_settings.cache_clear()  # the API and the Celery app read these
    settings = get_settings()
    upgrade_database(settings.resolved_database_url())
    # This process writes outbox messages (the API's): it sends them through the embedded
    # broker, and relays what a failed send left behind (there is no beat in the demo).
    configure_app(app, settings)
    install_outbox_senders(app, settings)
    relay = start_outbox_relay(settings)
    # No beat and no reaper worker here: the reaper runs in a thread of this process, so it is
    # not queued behind the phases of the one worker.
    reaper = start_reaper_thread(settings)
    worker = start_worker(env, state_dir / "worker.log")
    api = ApiServer(port).start()
    try:
        yield api.url, worker
    finally:
        stop_process(worker)
        api.stop()
        reaper.stop()
        relay.stop()


def _poll_job(client: Any, job_id: int, worker: subprocess.Popen[bytes], deadline: float) -> Any:
    """The job, or an error when the worker died or the job overran ``deadline``."""
    if worker.poll() is not None:
        raise RuntimeError(f"the worker exited with code {worker.returncode}")
    if time.monotonic() > deadline:
        raise RuntimeError(f"job {job_id} did not finish within {JOB_TIMEOUT_S:.0f} s")
    return _check(client.get(f"/v1/jobs/{job_id}", params={"log_chars": 200}), 200)


def _plain_progress_loop(
    client: Any, job_id: int, worker: subprocess.Popen[bytes]
) -> dict[str, Any]:
    """Without a terminal (CI logs, redirected output): timestamped lines and a heartbeat."""
    deadline = time.monotonic() + JOB_TIMEOUT_S
    with PlainProgress(sys.stderr) as plain:
        while True:
            job = _poll_job(client, job_id, worker, deadline)
            for stage in job["stages"]:
                if stage["state"] in (RunState.RUNNING, RunState.SUCCEEDED):
                    lines = [line for line in (stage.get("log_tail") or "").splitlines() if line]
                    # A log keeps the whole line (the ETA is at its end); only the terminal's
                    # progress bar below has a width to fit.
                    note = f"{stage['state']}: {lines[-1]}" if lines else stage["state"]
                    if stage["state"] == RunState.RUNNING or plain.phase == stage["name"]:
                        plain(stage["name"], float(stage["progress"] or 0.0), note)
            if job["state"] in TERMINAL_STATE_VALUES:
                return dict(job)
            time.sleep(POLL_INTERVAL_S)


def _progress_loop(client: Any, job_id: int, worker: subprocess.Popen[bytes]) -> dict[str, Any]:
    if not console.is_terminal:
        return _plain_progress_loop(client, job_id, worker)
    columns = (
        TextColumn("{task.description:>10}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[state]:<9}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
    )
    tasks: dict[str, TaskID] = {}
    deadline = time.monotonic() + JOB_TIMEOUT_S
    with Progress(*columns, console=console, transient=False) as progress:
        while True:
            job = _check(client.get(f"/v1/jobs/{job_id}", params={"log_chars": 200}), 200)
            for stage in job["stages"]:
                if stage["name"] not in tasks:
                    tasks[stage["name"]] = progress.add_task(
                        stage["name"], total=1.0, state="", note=""
                    )
                lines = [line for line in (stage.get("log_tail") or "").splitlines() if line]
                progress.update(
                    tasks[stage["name"]],
                    completed=stage["progress"],
                    state=stage["state"],
                    note=(lines[-1][:70] if lines and stage["state"] == RunState.RUNNING else ""),
                )
            if job["state"] in TERMINAL_STATE_VALUES:
                return job
            if worker.poll() is not None:
                raise RuntimeError(f"the worker exited with code {worker.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job_id} did not finish within {JOB_TIMEOUT_S:.0f} s")
            time.sleep(POLL_INTERVAL_S)


def print_result_table(results: list[dict[str, Any]], title: str) -> None:
    """The seed-aggregated metrics per scenario and back-end."""
    out_console.print(rows_table(results, title))


def find_or_create_demo_submission(client: Any) -> dict[str, Any]:
    """The team's built-in pitch submission of an earlier demo run, else a new one: a second run
    (e.g. ``--serve`` after a plain run) must not put the same submission twice on the board."""
    cursor = None
    while True:
        params: dict[str, Any] = {"kind": "builtin", "limit": 100}
        if cursor is not None:
            params["cursor"] = cursor
        page = _check(client.get("/v1/submissions", params=params), 200)
        for item in page["items"]:
            if item["name"] == DEMO_SUBMISSION_NAME and item["status"] == "accepted":
                return dict(item)
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    return _check(
        client.post(
            "/v1/submissions",
            json={
                "kind": "builtin",
                "name": DEMO_SUBMISSION_NAME,
                "visibility": "public",
                "builtin": {"name": "pitch", "params": {}},
            },
        ),
        200,
        201,
    )


def run_platform_demo(
    out: Path,
    config: EvaluationConfig | None = None,
    *,
    serve: bool = False,
    as_json: bool = False,
) -> int:
    """Run the platform demo with its state under ``out/platform``; returns the exit code.

    ``serve``: keep the API (and its pages) running after the result until Ctrl-C. A second run
    on the same folder reuses the job (same idempotency key) and its stages, so it is quick.

    ``config``: the evaluation (default ``demo_config()``); its anonymizer is replaced by the
    built-in pitch submission.
    """
    import httpx

    state_dir = Path(out) / "platform"
    state_dir.mkdir(parents=True, exist_ok=True)
    console.print(
        f"Unmask platform demo: API + Celery worker (embedded: SQLite, local blobs, filesystem"
        f" broker) in {state_dir}"
    )
    started = time.monotonic()
    with embedded_platform(state_dir) as (url, worker):
        from services.settings import get_settings

        settings = get_settings()
        admin_token = bootstrap_admin_token(
            settings.resolved_database_url(), settings.token_hmac_key
        )
        console.print(f"API on {url}; worker pid {worker.pid} (log: {state_dir / 'worker.log'})")
        admin = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=60
        )
        team = admin.post("/v1/admin/teams", json={"slug": DEMO_TEAM})
        if team.status_code != 409:  # 409: the team exists from an earlier run
            _check(team, 201)
        token = _check(
            admin.post(
                "/v1/admin/tokens",
                json={"team": DEMO_TEAM, "scopes": ["submit", "read"], "name": "demo"},
            ),
            201,
        )["token"]
        protocol = _check(
            admin.post(
                "/v1/admin/protocols",
                json={"name": DEMO_PROTOCOL, "config": demo_protocol_config(config)},
            ),
            200,
            201,
        )
        client = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        )
        submission = find_or_create_demo_submission(client)
        job = _check(
            client.post(
                "/v1/jobs",
                json={"submission_id": submission["id"], "protocol_id": protocol["id"]},
                headers={"Idempotency-Key": f"demo-{submission['id']}"},
            ),
            200,
            201,
        )
        console.print(
            f"team {DEMO_TEAM}: submission {submission['id']} (pitch), job {job['id']} on"
            f" protocol {protocol['name']} v{protocol['version']}"
        )
        job = _progress_loop(client, job["id"], worker)
        if job["state"] != RunState.SUCCEEDED:
            console.print(f"[red]job {job['id']} {job['state']}: {job.get('error_message')}")
            return 1
        answer = _check(client.get(f"/v1/jobs/{job['id']}/results"), 200)
        results = answer["results"]
        print_result_table(results, f"job {job['id']}: pitch on {protocol['name']}")
        if as_json:
            board = _check(client.get(f"/v1/protocols/{protocol['id']}/leaderboard"), 200)
            out_console.print_json(json.dumps(board))
        out_console.print()
        print_verdict(
            out_console,
            results,
            answer.get("trust"),
            where=f"{url}/v1/jobs/{job['id']}/results (API), artifacts at "
            f"{url}/v1/jobs/{job['id']}/artifacts",
        )
        pages = (
            f"leaderboard page: {url}/protocols/{protocol['id']}  submission page: "
            f"{url}/submissions/{submission['id']}"
        )
        console.print(f"done in {time.monotonic() - started:.0f} s")
        if not serve:
            console.print(f"{pages} (the server stops now; `unmask demo --serve` keeps it up)")
            return 0
        console.print(f"{pages}  (serving until Ctrl-C)")

        def _interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        # SIGTERM (e.g. `timeout`, a service manager) must also stop the worker subprocess.
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            while worker.poll() is None:
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
    return 0
