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

``run_platform_demo(out)`` returns the process exit code (0 when the job succeeded, 1 when it
did not or the demo could not go on, 130 when it was stopped); every failure is one line, never a
traceback. A busy API (429/503) is waited for as its ``Retry-After`` asks; a job is given up only
when it stalls (no heartbeat and no progress for ``STALL_TIMEOUT_S``), never for being slow. The
worker runs in its own process group and dies with the demo, however the demo ends (a signal, a
closed terminal, SIGKILL: Linux's parent-death signal).
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
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from cli.die_with_parent import PARENT_PID_VARIABLE
from cli.progress import PlainProgress, stdout_console
from cli.result_table import rows_table
from cli.verdict import print_verdict
from services.vocab import TERMINAL_STATE_VALUES, RunState
from unmask_client.retry import RetryAfterTransport

if TYPE_CHECKING:
    from services.pipeline.config import EvaluationConfig

console = Console(stderr=True)
# Piped output (logs, tests) gets a fixed width that fits the result table uncut.
out_console = stdout_console()

DEMO_TEAM = "demo-lab"
DEMO_PROTOCOL = "demo-synthetic"
DEMO_SUBMISSION_NAME = "pitch (built-in)"
STALL_TIMEOUT_S = 10 * 60.0
"""A job whose stages show no new heartbeat, progress or state for this long is stalled, seconds
(the worker heartbeats every 2 s while it computes)."""
POLL_INTERVAL_S = 1.0
WORKER_STOP_GRACE_S = 10.0
"""How long the worker gets to stop after SIGTERM before its process group is killed, seconds."""
JOB_KEY_FILE = "demo-job-key"
"""In the state folder: the idempotency key of the folder's current demo job."""
DEAD_STATES = frozenset({RunState.FAILED.value, RunState.CANCELLED.value})
FINISHED_STATES = frozenset(TERMINAL_STATE_VALUES)


class DemoError(RuntimeError):
    """The demo cannot go on; the message is the one line the user sees."""


class DemoStopped(BaseException):
    """The demo was asked to stop (SIGTERM, SIGHUP: a closed terminal)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


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
        from api.server import server_options

        # The image's server options: this server answers as a deployment's does.
        config = uvicorn.Config(
            create_app(), host="127.0.0.1", port=port, log_level="warning", **server_options()
        )
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
    """A Celery worker subprocess on both queues (solo pool), logging to ``log_path``.

    It runs in its own process group (a Ctrl-C reaches the demo, which stops it) and dies with
    this process whatever ends it (``cli.die_with_parent``: the parent-death signal)."""
    command = [
        sys.executable,
        "-m",
        "cli.die_with_parent",
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
    with open(log_path, "ab") as log_file:  # the child keeps its own descriptor
        return subprocess.Popen(
            command,
            env={**os.environ, **env, PARENT_PID_VARIABLE: str(os.getpid())},
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=Path(__file__).resolve().parents[1],
            start_new_session=True,
        )


def _kill_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = WORKER_STOP_GRACE_S) -> None:
    """Stop a child we started in its own process group: SIGTERM (a warm shutdown, which an
    idle worker finishes at once), then, after ``timeout_s`` seconds, SIGKILL to the group (a
    worker in the middle of a phase would otherwise finish it first). Whatever the child left in
    its group (pools, helpers) is killed too."""
    if process.poll() is None:
        _kill_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process, signal.SIGKILL)
            process.wait(timeout=timeout_s)
    _kill_group(process, signal.SIGKILL)


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
        raise DemoError(
            f"{response.request.method} {response.request.url.path} answered"
            f" {response.status_code}: {response.text[:500]}"
        )
    body: dict[str, Any] = response.json()
    return body


def _note_wait(request: Any, why: str, seconds: float) -> None:
    console.print(
        f"[dim]{request.method} {request.url.path} {why}: retrying in {seconds:.0f} s[/dim]"
    )


def api_client(url: str, token: str) -> Any:
    """An HTTP client of the embedded API that waits out 429/503 (``Retry-After``)."""
    import httpx

    return httpx.Client(
        base_url=url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
        transport=RetryAfterTransport(on_wait=_note_wait),
    )


def demo_protocol_config(config: EvaluationConfig | None = None) -> dict[str, Any]:
    """The demo evaluation config (default ``demo_config()``) without its anonymizer (that
    comes from the submission) and name (each job is named after its submission)."""
    from services.pipeline.config import demo_config

    cfg = config if config is not None else demo_config()
    body: dict[str, Any] = cfg.model_dump(
        mode="json", exclude={"anonymizer", "protocol_file", "name"}
    )
    return body


@contextlib.contextmanager
def embedded_platform(state_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """API thread + worker subprocess on the embedded state folder; yields (API URL, worker)."""
    from services.settings import get_settings
    from services.storage.migrate import upgrade_database
    from workers.app import app, configure_app, install_outbox_senders

    port = free_port()
    env = embedded_environment(state_dir, api_port=port)
    os.environ.update(env)
    get_settings.cache_clear()  # the API and the Celery app read these
    settings = get_settings()
    upgrade_database(settings.resolved_database_url())
    # This process writes outbox messages (the API's): it sends them through the embedded
    # broker after each commit. There is no beat: the worker relays what a failed send left
    # behind and runs the reaper, as threads beside its phases (workers.app.EmbeddedSweeps).
    configure_app(app, settings)
    install_outbox_senders(app, settings)
    worker = start_worker(env, state_dir / "worker.log")
    api = ApiServer(port).start()
    try:
        yield api.url, worker
    finally:
        stop_process(worker)
        api.stop()


def _stage_signature(job: dict[str, Any]) -> tuple[Any, ...]:
    """What changes while a job is alive: states, progress, heartbeats, attempts."""
    return (
        job["state"],
        tuple(
            (s["name"], s["state"], s["progress"], s.get("heartbeat_at"), s.get("attempts"))
            for s in job["stages"]
        ),
    )


class JobWatch:
    """Polls a job until it is finished; raises :class:`DemoError` when the worker exits or
    the job stalls (nothing in :func:`_stage_signature` changed for ``stall_timeout_s``)."""

    def __init__(
        self,
        client: Any,
        job_id: int,
        worker: subprocess.Popen[bytes] | None,
        *,
        stall_timeout_s: float = STALL_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
        log_path: Path | None = None,
    ) -> None:
        self.client = client
        self.job_id = job_id
        self.worker = worker
        self.stall_timeout_s = stall_timeout_s
        self.clock = clock
        self.log_path = log_path
        self._signature: tuple[Any, ...] | None = None
        self._changed_at = clock()

    def _where(self) -> str:
        return f" (worker log: {self.log_path})" if self.log_path is not None else ""

    def poll(self) -> dict[str, Any]:
        """The job now; errors as the class says."""
        job = _check(self.client.get(f"/v1/jobs/{self.job_id}", params={"log_chars": 200}), 200)
        if job["state"] in FINISHED_STATES:
            return job
        if self.worker is not None and self.worker.poll() is not None:
            raise DemoError(
                f"the worker exited with code {self.worker.returncode} while job"
                f" {self.job_id} was {job['state']}{self._where()}"
            )
        signature = _stage_signature(job)
        now = self.clock()
        if signature != self._signature:
            self._signature, self._changed_at = signature, now
        elif now - self._changed_at > self.stall_timeout_s:
            raise DemoError(
                f"job {self.job_id} stalled: no heartbeat, progress or state change for"
                f" {self.stall_timeout_s:.0f} s{self._where()}"
            )
        return job


def _plain_progress_loop(watch: JobWatch) -> dict[str, Any]:
    """Without a terminal (CI logs, redirected output): timestamped lines and a heartbeat."""
    with PlainProgress(sys.stderr) as plain:
        while True:
            job = watch.poll()
            for stage in job["stages"]:
                if stage["state"] in (RunState.RUNNING, RunState.SUCCEEDED):
                    lines = [line for line in (stage.get("log_tail") or "").splitlines() if line]
                    # A log keeps the whole line (the ETA is at its end); only the terminal's
                    # progress bar below has a width to fit.
                    note = f"{stage['state']}: {lines[-1]}" if lines else stage["state"]
                    if stage["state"] == RunState.RUNNING or plain.phase == stage["name"]:
                        plain(stage["name"], float(stage["progress"] or 0.0), note)
            if job["state"] in FINISHED_STATES:
                return dict(job)
            time.sleep(POLL_INTERVAL_S)


def _progress_loop(watch: JobWatch) -> dict[str, Any]:
    if not console.is_terminal:
        return _plain_progress_loop(watch)
    columns = (
        TextColumn("{task.description:>10}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[state]:<9}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
    )
    tasks: dict[str, TaskID] = {}
    with Progress(*columns, console=console, transient=False) as progress:
        while True:
            job = watch.poll()
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
            if job["state"] in FINISHED_STATES:
                return job
            time.sleep(POLL_INTERVAL_S)


def print_result_table(results: list[dict[str, Any]], title: str) -> None:
    """The seed-aggregated metrics per scenario and back-end."""
    out_console.print(rows_table(results, title))


def print_job_verdict(console: Any, answer: dict[str, Any], url: str, job_id: int) -> None:
    """The verdict block of a job's results answer (``GET /v1/jobs/{id}/results``: its rows and
    trust check, with the challenger), printed as ``unmask evaluate`` prints a results.json's."""
    print_verdict(
        console,
        answer["results"],
        answer.get("trust"),
        where=f"{url}/v1/jobs/{job_id}/results (API), artifacts at "
        f"{url}/v1/jobs/{job_id}/artifacts",
    )


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


def start_demo_job(
    client: Any, submission_id: int, protocol_id: int, state_dir: Path, *, fresh: bool = False
) -> dict[str, Any]:
    """The folder's demo job (its idempotency key is kept in ``state_dir``), or a fresh one when
    ``fresh`` or when the folder's job failed or was cancelled (said on the console)."""
    key_file = state_dir / JOB_KEY_FILE
    default_key = f"demo-{submission_id}"
    key = key_file.read_text(encoding="utf-8").strip() if key_file.is_file() else default_key
    if not key.startswith(default_key):  # another submission (a new database): its own key
        key = default_key

    def create(idempotency_key: str) -> dict[str, Any]:
        return _check(
            client.post(
                "/v1/jobs",
                json={"submission_id": submission_id, "protocol_id": protocol_id},
                headers={"Idempotency-Key": idempotency_key},
            ),
            200,
            201,
        )

    def new_key() -> str:
        return f"{default_key}-{uuid.uuid4().hex[:12]}"

    if fresh:
        key = new_key()
        job = create(key)
        console.print(f"--fresh: started a new job {job['id']}")
    else:
        job = create(key)
        if job["state"] in DEAD_STATES:
            old = job
            key = new_key()
            job = create(key)
            console.print(
                f"job {old['id']} of this folder {old['state']}"
                f"{': ' + str(old['error_message']) if old.get('error_message') else ''};"
                f" started a fresh job {job['id']} (finished stages are reused)"
            )
    key_file.write_text(key + "\n", encoding="utf-8")
    return job


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP (a closed terminal) raise :class:`DemoStopped` in the main thread,
    so the demo's ``finally`` blocks stop its worker and API (SIGINT raises KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum: int, frame: FrameType | None) -> None:
        raise DemoStopped(signum)

    wanted = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    previous = {signum: signal.signal(signum, _raise) for signum in wanted}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_platform_demo(
    out: Path,
    config: EvaluationConfig | None = None,
    *,
    serve: bool = False,
    as_json: bool = False,
    fresh: bool = False,
    stall_timeout_s: float = STALL_TIMEOUT_S,
) -> int:
    """Run the platform demo with its state under ``out/platform``; returns the exit code
    (0: the job succeeded; 1: it did not, or the demo could not go on; 130: stopped). Every
    failure is one line on stderr; an unexpected error's traceback goes to
    ``out/platform/demo-error.log``.

    ``serve``: keep the API (and its pages) running after the result until Ctrl-C. A second run
    on the same folder reuses the job (same idempotency key) and its stages, so it is quick; a
    job that failed or was cancelled is replaced by a fresh one, as is any job with ``fresh``.

    ``config``: the evaluation (default ``demo_config()``); its anonymizer is replaced by the
    built-in pitch submission.
    """
    state_dir = Path(out) / "platform"
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        with stop_on_signals():
            return _run(
                state_dir,
                config,
                serve=serve,
                as_json=as_json,
                fresh=fresh,
                stall_timeout_s=stall_timeout_s,
            )
    except DemoError as exc:
        console.print(f"[red]unmask demo: {exc}[/red]", highlight=False)
        return 1
    except (KeyboardInterrupt, DemoStopped) as exc:
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"stopped ({exc})"
        console.print(f"unmask demo: {why}; the API and the worker are stopped", highlight=False)
        return 130
    except Exception as exc:  # the user gets one line, the log file the traceback
        log = state_dir / "demo-error.log"
        with contextlib.suppress(OSError):
            log.write_text(traceback.format_exc(), encoding="utf-8")
        console.print(
            f"[red]unmask demo: {type(exc).__name__}: {exc} (details: {log})[/red]",
            highlight=False,
        )
        return 1


def _run(
    state_dir: Path,
    config: EvaluationConfig | None,
    *,
    serve: bool,
    as_json: bool,
    fresh: bool,
    stall_timeout_s: float,
) -> int:
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
        admin = api_client(url, admin_token)
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
        client = api_client(url, token)
        submission = find_or_create_demo_submission(client)
        job = start_demo_job(client, submission["id"], protocol["id"], state_dir, fresh=fresh)
        console.print(
            f"team {DEMO_TEAM}: submission {submission['id']} (pitch), job {job['id']} on"
            f" protocol {protocol['name']} v{protocol['version']}"
        )
        watch = JobWatch(
            client,
            job["id"],
            worker,
            stall_timeout_s=stall_timeout_s,
            log_path=state_dir / "worker.log",
        )
        job = _progress_loop(watch)
        if job["state"] != RunState.SUCCEEDED:
            console.print(
                f"[red]job {job['id']} {job['state']}: {job.get('error_message')}[/red]"
                f" (the next `unmask demo` on this folder starts a fresh job)",
                highlight=False,
            )
            return 1
        answer = _check(client.get(f"/v1/jobs/{job['id']}/results"), 200)
        results = answer["results"]
        print_result_table(results, f"job {job['id']}: pitch on {protocol['name']}")
        if as_json:
            board = _check(client.get(f"/v1/protocols/{protocol['id']}/leaderboard"), 200)
            out_console.print_json(json.dumps(board))
        out_console.print()
        print_job_verdict(out_console, answer, url, job["id"])
        pages = (
            f"leaderboard page: {url}/protocols/{protocol['id']}  submission page: "
            f"{url}/submissions/{submission['id']}"
        )
        console.print(f"done in {time.monotonic() - started:.0f} s")
        if not serve:
            console.print(f"{pages} (the server stops now; `unmask demo --serve` keeps it up)")
            return 0
        console.print(f"{pages}  (serving until Ctrl-C)")
        try:
            while worker.poll() is None:
                time.sleep(1.0)
        except (KeyboardInterrupt, DemoStopped):
            pass
    return 0
