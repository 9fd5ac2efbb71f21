"""The Celery app of ``workers/`` set up for a test: pointed at a broker, with a worker's
services and the outbox's Celery senders installed, a worker in a thread of the test process
(``celery.contrib.testing.worker``, solo pool), and worker/beat subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from services.platform.jobs import JobServices
from services.platform.outbox import install_senders
from services.settings import Settings, get_settings
from workers import runtime
from workers.app import app, configure_app, install_outbox_senders, reset_connections

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def celery_app_on(
    settings: Settings,
    services: JobServices | None = None,
    *,
    key_prefix: str | None = None,
    outbox_senders: bool = True,
) -> Iterator[None]:
    """The Celery app configured from ``settings`` while the block runs.

    ``key_prefix``: every Redis key of the broker starts with it (the keys are deleted at the
    end); ``outbox_senders``: the outbox sends through Celery (else the caller installs its
    own); ``services``: the worker services the tasks run with. At the end the services and
    senders are removed and the app goes back to the environment's settings.
    """
    configure_app(app, settings)
    if key_prefix is not None:
        app.conf.broker_transport_options = {
            **app.conf.broker_transport_options,
            "global_keyprefix": key_prefix,
        }
        reset_connections(app)
    if outbox_senders:
        install_outbox_senders(app, settings)
    if services is not None:
        runtime.set_services(services)
    try:
        yield
    finally:
        runtime.set_services(None)
        install_senders(None)
        if key_prefix is not None:
            import redis

            client = redis.Redis.from_url(settings.broker_url)
            keys = list(client.scan_iter(f"{key_prefix}*"))
            if keys:
                client.delete(*keys)
        configure_app(app, get_settings())


def worker_thread(*queues: str) -> AbstractContextManager[Any]:
    """A Celery worker consuming ``queues`` in a thread of this process (solo pool) while the
    block runs."""
    from celery.contrib.testing.worker import start_worker

    return start_worker(app, pool="solo", perform_ping_check=False, queues=list(queues))


def spawn_celery(
    args: list[str], env: dict[str, str], log: Path, *, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """``celery -A workers.app <args>`` as a subprocess of this test (a separate "host" when
    ``env`` names its own ``UNMASK_DATA_DIR``), its output appended to ``log``."""
    with open(log, "ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.app", *args],
            env={**os.environ, **env},
            stdout=handle,
            stderr=subprocess.STDOUT,
            cwd=cwd or ROOT,
        )


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = 20.0) -> None:
    """SIGTERM a child this test started, then SIGKILL if it does not exit."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout_s)


def wait_until_ready(process: subprocess.Popen[bytes], log: Path, timeout_s: float = 120) -> None:
    """Wait for a worker subprocess to log ``ready`` (it consumes from then on)."""
    deadline = time.monotonic() + timeout_s
    while "ready" not in (log.read_text(errors="replace") if log.exists() else ""):
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RuntimeError(f"celery worker did not start:\n{tail}")
        time.sleep(0.2)
