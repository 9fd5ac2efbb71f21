"""What every request handler shares: settings, the database, the blob store.

Built once per app by :func:`api.app.create_app`; the database engine and the blob store are
created on first use, so importing ``api.app`` has no side effects (no connection, no folder).
Work for the workers (a job's first phase, a cancel's revocation, an archive's validation) is
written to the outbox in the request's transaction (services/platform/outbox/) and sent after the
commit by the senders this process installed at start-up (:meth:`ApiContext.start`): the Celery
ones by default, imported then, so the API runs (and its tests run) without Celery configured.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping

from fastapi import Request

from api.auth_limits import FailedAuthLimiter
from services.cpu_pool import CpuPool
from services.platform.comparison.background import PairedResults
from services.platform.identity.oidc import KeySetCache
from services.platform.outbox import MessageSender, install_senders
from services.settings import Settings
from services.storage.blob_interface import BlobStore
from services.storage.blobstore import blob_store_from_settings
from services.storage.db import Database


class ApiContext:
    """Per-app shared state; thread-safe lazy construction of database and blob store.

    ``senders``: the outbox senders to install at start-up (topic -> sender; tests pass
    recording ones); None = the Celery senders of ``workers.app``.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        database: Database | None = None,
        blob_store: BlobStore | None = None,
        senders: Mapping[str, MessageSender] | None = None,
    ) -> None:
        self.settings = settings
        self._database = database
        self._blob_store = blob_store
        self.senders = senders
        self._lock = threading.Lock()
        self._cpu_pool: CpuPool | None = None
        self._paired: PairedResults | None = None
        self._plot_slot: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self._key_sets: KeySetCache | None = None
        self.auth_limiter = FailedAuthLimiter(
            settings.auth_max_failures, settings.auth_failure_window_s
        )

    @property
    def database(self) -> Database:
        """The database named by the settings (engine created on first use), with the API's
        statement timeout (``database_statement_timeout_s``)."""
        if self._database is None:
            with self._lock:
                if self._database is None:
                    # Requests answer in seconds: a statement stuck on a lock or a
                    # database that stopped answering is cut by the server (503).
                    self._database = Database.from_settings(
                        self.settings,
                        statement_timeout_s=self.settings.database_statement_timeout_s,
                    )
        return self._database

    @property
    def blob_store(self) -> BlobStore:
        """The blob store named by the settings (created on first use)."""
        if self._blob_store is None:
            with self._lock:
                if self._blob_store is None:
                    self._blob_store = blob_store_from_settings(self.settings)
        return self._blob_store

    @property
    def oidc_key_sets(self) -> KeySetCache:
        """The OpenID Connect issuers' key sets, cached for this app (created on first use)."""
        if self._key_sets is None:
            with self._lock:
                if self._key_sets is None:
                    self._key_sets = KeySetCache(
                        allow_private=self.settings.outbound_allow_private_hosts,
                        ttl_s=self.settings.oidc_key_set_ttl_s,
                    )
        return self._key_sets

    @property
    def cpu_pool(self) -> CpuPool:
        """The child processes of this app's CPU-bound work (``UNMASK_CPU_POOL_PROCESSES``;
        started on first use): nothing that holds the GIL for long runs in the API process."""
        if self._cpu_pool is None:
            with self._lock:
                if self._cpu_pool is None:
                    self._cpu_pool = CpuPool(self.settings.cpu_pool_processes)
        return self._cpu_pool

    @property
    def paired_results(self) -> PairedResults:
        """The comparisons' paired intervals: computed in :attr:`cpu_pool`, cached."""
        if self._paired is None:
            store, pool = self.blob_store, self.cpu_pool  # each takes the lock itself
            with self._lock:
                if self._paired is None:
                    self._paired = PairedResults(store, pool)
        return self._paired

    def plot_slot(self) -> asyncio.Semaphore:
        """The slots of this app's plot renders on the running event loop: one per child of
        :attr:`cpu_pool`, so plots never queue there behind each other (waiters hold no
        thread)."""
        loop = asyncio.get_running_loop()
        if self._plot_slot is None or self._plot_slot[0] is not loop:
            self._plot_slot = (loop, asyncio.Semaphore(self.settings.cpu_pool_processes))
        return self._plot_slot[1]

    def start(self) -> None:
        """Process start-up: refuse settings that would let the ``Host`` header pick the
        server's links (:meth:`Settings.host_binding_problem`), then install the outbox senders
        (see the class docstring)."""
        problem = self.settings.host_binding_problem()
        if problem is not None:
            raise RuntimeError(problem)
        if self.senders is not None:
            install_senders(self.senders, retry_after_s=self.settings.outbox_resend_after_s)
            return
        from workers.app import app, install_outbox_senders

        install_outbox_senders(app, self.settings)

    def close(self) -> None:
        """Release pooled database connections, the background threads and child processes."""
        if self._paired is not None:
            self._paired.close()
        if self._cpu_pool is not None:
            self._cpu_pool.close()
        if self._database is not None:
            self._database.dispose()


async def get_context(request: Request) -> ApiContext:
    """FastAPI dependency: the app's :class:`ApiContext`.

    ``async`` although it awaits nothing: FastAPI runs plain ``def`` dependencies in the thread
    pool, and a thread hop per request costs more than this attribute lookup.
    """
    context: ApiContext = request.app.state.context
    return context
