"""The Celery app of ``workers/`` set up for a test: pointed at a broker, with a worker's
services and the outbox's Celery senders installed, and a worker in a thread of the test
process (``celery.contrib.testing.worker``, solo pool)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from services.platform.jobs import JobServices
from services.platform.outbox import install_senders
from services.settings import Settings, get_settings
from workers import runtime
from workers.app import app, configure_app, install_outbox_senders, reset_connections


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
