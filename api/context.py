"""What every request handler shares: settings, the database, the blob store, the dispatcher.

Built once per app by :func:`api.app.create_app`; the database engine and the blob store are
created on first use, so importing ``api.app`` has no side effects (no connection, no folder).
The dispatcher hands jobs to the workers; the default one imports ``workers.dispatch`` only when
called, so the API runs (and its tests run) without Celery configured.
"""

from __future__ import annotations

import threading
from typing import Protocol

from fastapi import Request

from services.settings import Settings
from services.storage.blobstore import BlobStore, blob_store_from_settings
from services.storage.db import Database


class Dispatcher(Protocol):
    """Hands work to the workers (``workers.dispatch`` in the platform)."""

    def enqueue_job(self, job_id: int) -> None:
        """Queue the stages of a committed job."""

    def cancel_job(self, job_id: int) -> None:
        """Revoke the queued and running tasks of a job already marked cancelled."""

    def enqueue_archive_validation(self, submission_id: int) -> None:
        """Queue the validation of an uploaded archive submission."""


class WorkersDispatcher:
    """The platform dispatcher: calls ``workers.dispatch``, imported lazily."""

    def enqueue_job(self, job_id: int) -> None:
        from workers import dispatch

        dispatch.enqueue_job(job_id)

    def cancel_job(self, job_id: int) -> None:
        from workers import dispatch

        dispatch.cancel_job(job_id)

    def enqueue_archive_validation(self, submission_id: int) -> None:
        from workers import dispatch

        dispatch.enqueue_archive_validation(submission_id)


class ApiContext:
    """Per-app shared state; thread-safe lazy construction of database and blob store."""

    def __init__(
        self,
        settings: Settings,
        *,
        database: Database | None = None,
        blob_store: BlobStore | None = None,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        self.settings = settings
        self._database = database
        self._blob_store = blob_store
        self.dispatcher: Dispatcher = dispatcher or WorkersDispatcher()
        self._lock = threading.Lock()

    @property
    def database(self) -> Database:
        """The database named by the settings (engine created on first use)."""
        if self._database is None:
            with self._lock:
                if self._database is None:
                    self._database = Database.from_settings(self.settings)
        return self._database

    @property
    def blob_store(self) -> BlobStore:
        """The blob store named by the settings (created on first use)."""
        if self._blob_store is None:
            with self._lock:
                if self._blob_store is None:
                    self._blob_store = blob_store_from_settings(self.settings)
        return self._blob_store

    def close(self) -> None:
        """Release pooled database connections."""
        if self._database is not None:
            self._database.dispose()


async def get_context(request: Request) -> ApiContext:
    """FastAPI dependency: the app's :class:`ApiContext`.

    ``async`` although it awaits nothing: FastAPI runs plain ``def`` dependencies in the thread
    pool, and a thread hop per request costs more than this attribute lookup.
    """
    context: ApiContext = request.app.state.context
    return context
