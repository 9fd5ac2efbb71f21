"""What a worker process hands the job code: database, blob store, settings, its name, and which
errors are transient.

The transient-error taxonomy is passed in (``JobServices.transient_errors``): this package knows
the database's and the blob store's connection errors; the workers add the broker's (kombu,
redis), which services/ never imports.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

from services.anonymizers.container import ContainerEngineError
from services.errors import InvalidInputError
from services.settings import Settings
from services.storage.blob_interface import BlobStore, s3_connection_errors
from services.storage.db import Database


def storage_transient_errors() -> tuple[type[BaseException], ...]:
    """Lost connections to the database or the blob store (Python, SQLAlchemy, psycopg, S3).

    The S3 store raises ``BlobStoreUnavailableError`` (a ``ConnectionError``) for its 5xx,
    throttling and lost connections; botocore's own connection errors are listed too, for
    anything that reaches S3 around the store.
    """
    from psycopg import OperationalError as PsycopgOperationalError
    from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError

    return (
        ConnectionError,
        TimeoutError,
        OperationalError,
        InterfaceError,
        DisconnectionError,
        PsycopgOperationalError,
        *s3_connection_errors(),
    )


def job_transient_errors() -> tuple[type[BaseException], ...]:
    """What a job phase retries: the storage errors and a container engine that does not answer
    or fails (a socket hiccup must not fail every container job)."""
    return (*storage_transient_errors(), ContainerEngineError)


def transient_summary(exc: BaseException) -> str:
    """What a user may read about a transient error: which service, never its address, socket
    path or exception type (those go to the worker's log)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ContainerEngineError):
            return current.public_message
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return "lost connection to a platform service (database, blob store or broker)"


def is_transient_error(exc: BaseException, transient: tuple[type[BaseException], ...]) -> bool:
    """Whether ``exc`` (or its cause/context) is one of ``transient`` (bad input never is)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, InvalidInputError):
            return False
        if isinstance(current, transient):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


@dataclass
class JobServices:
    """Database, blob store, settings, this host's name and the transient errors.

    ``transient_errors``: exception types that mean "connection lost, retry later" (default: the
    database's, the blob store's and the container engine's; the workers add the broker's).
    """

    database: Database
    store: BlobStore
    settings: Settings
    worker_host: str = field(default_factory=socket.gethostname)
    transient_errors: tuple[type[BaseException], ...] = field(default_factory=job_transient_errors)

    def is_transient(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a lost connection (retry later) rather than a failure."""
        return is_transient_error(exc, self.transient_errors)

    def stages_dir(self) -> Path:
        """The host's shared stage cache (content-addressed, shared by all jobs)."""
        return self.settings.resolved_work_dir() / "stages"

    def job_dir(self, job_id: int) -> Path:
        """The local folder of one job (report, plots)."""
        return self.settings.resolved_work_dir() / "jobs" / str(job_id)
