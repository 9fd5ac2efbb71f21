"""The services a worker process uses (database, blob store, settings), built once.

The platform builds them from `Settings`; tests and the embedded demo may install their own with
:func:`set_services` (same process) or simply set ``UNMASK_*`` variables (subprocess workers).
"""

from __future__ import annotations

import os
import threading

from services.platform.jobs.host import JobServices
from services.settings import get_settings
from services.storage.blobstore import blob_store_from_settings
from services.storage.db import Database
from workers.errors import transient_errors

_lock = threading.Lock()
_services: JobServices | None = None
_process_id = os.getpid()  # the process the state above belongs to (a forked child inherits it)
# The Celery node name (``gpu@host``), recorded as the stages' worker_host; set at worker start.
_node_name: str | None = None


def set_node_name(name: str) -> None:
    """Name this process's stages after the Celery node (several workers may share a host)."""
    global _node_name
    _node_name = name
    if _services is not None:
        _services.worker_host = name


def get_services() -> JobServices:
    """The process's :class:`JobServices` (created on first use from the settings)."""
    global _services
    if _services is None:
        with _lock:
            if _services is None:
                settings = get_settings()
                _services = JobServices(
                    database=Database.from_settings(settings),
                    store=blob_store_from_settings(settings),
                    settings=settings,
                    transient_errors=transient_errors(),
                )
                if _node_name is not None:
                    _services.worker_host = _node_name
    return _services


def reset_after_fork() -> None:
    """In a forked pool child: forget the parent's services (built by the embedded sweeps'
    threads: their pooled connections belong to the parent, and SQLite's must not cross a fork)
    and a lock one of those threads may have held at the fork; the child builds its own.

    Nothing to do in the process the state belongs to: the solo pool sends
    ``worker_process_init`` from the worker's own process, whose services (a test's or the
    demo's, installed with :func:`set_services`) must stay."""
    global _lock, _services, _process_id
    if os.getpid() == _process_id:
        return
    _process_id = os.getpid()
    _lock = threading.Lock()
    if _services is not None:
        _services.database.engine.dispose(close=False)  # the parent's connections stay open
    _services = None


def set_services(services: JobServices | None) -> None:
    """Install ``services`` for this process (None: rebuild from settings on next use)."""
    global _services
    with _lock:
        _services = services
