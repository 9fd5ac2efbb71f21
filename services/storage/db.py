"""Engine and session factories built from :class:`services.settings.Settings`.

``Database`` holds one engine and one session factory; ``db.session_scope()`` yields a session
that commits on success and rolls back on any exception. The same code runs on PostgreSQL
(``postgresql+psycopg://...``) and SQLite (the embedded default,
``Settings.resolved_database_url()``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from services.settings import Settings, get_settings

DEFAULT_SQLITE_BUSY_TIMEOUT_S = 30.0
"""How long a SQLite transaction waits for another one's write lock, seconds (the default of
``Settings.sqlite_busy_timeout_s``)."""


def _configure_sqlite(engine: Engine, *, busy_timeout_s: float) -> None:
    """Pragmas and transaction begin of a SQLite engine (the embedded deployment).

    - WAL: readers do not block the writer, nor the writer the readers.
    - ``busy_timeout``: a transaction waits for the write lock instead of failing.
    - ``BEGIN IMMEDIATE``: every transaction takes the write lock when it begins. A deferred
      transaction that reads and then writes (a token check that records ``last_used_at``, a
      re-run plan) fails at once with "database is locked" when another connection wrote in
      between: SQLite cannot wait there without risking a deadlock, so the busy timeout does not
      apply. Taken at BEGIN, the lock is waited for like any other. Transactions are short (no
      session is held across computation), so one writer at a time costs little.
    - A second transaction of a thread while its first is still open (a helper opening its own
      session) begins deferred: it must not wait for the lock its own thread holds. Its reads go
      through; a write in it waits for the first transaction, as it would on PostgreSQL.
    """
    busy_timeout_ms = max(1, round(busy_timeout_s * 1000))
    # id(Connection) -> the thread that began its open transaction (a transaction may end in
    # another thread than it began in, e.g. across an await).
    begun_by: dict[int, int] = {}
    begun_lock = threading.Lock()

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        # SQLite ignores ON DELETE clauses unless foreign keys are switched on per connection.
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        cursor.close()
        # pysqlite's own transaction handling defers BEGIN and breaks SAVEPOINT (a RELEASE of
        # the first savepoint would commit); take over and emit BEGIN ourselves, as the
        # SQLAlchemy docs recommend.
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        thread = threading.get_ident()
        with begun_lock:
            nested = thread in begun_by.values()
        connection.exec_driver_sql("BEGIN" if nested else "BEGIN IMMEDIATE")
        with begun_lock:
            begun_by[id(connection)] = thread

    @event.listens_for(engine, "commit")
    @event.listens_for(engine, "rollback")
    def _on_end(connection: Any) -> None:
        with begun_lock:
            begun_by.pop(id(connection), None)


DEFAULT_CONNECT_TIMEOUT_S = 10
"""How long opening a server database connection may take (seconds): a database that accepts
connections but never answers fails a request in seconds, not minutes."""


DEFAULT_TCP_KEEPALIVE_S = 30
"""How long a server database connection may be silent before TCP keepalive probes start, seconds
(the default of ``Settings.database_tcp_keepalive_s``)."""
KEEPALIVE_INTERVAL_S = 10
"""Seconds between two unanswered keepalive probes."""
KEEPALIVE_COUNT = 3
"""Unanswered keepalive probes after which the connection is dead."""


def _postgres_keepalive_args(url: str, tcp_keepalive_s: int) -> dict[str, int]:
    """libpq keepalive parameters that probe a connection silent ``tcp_keepalive_s`` seconds
    (0: none, libpq's and the operating system's defaults); the URL's own
    (``?keepalives_idle=...``) are kept.

    Without them a connection whose network is cut mid-statement waits for an answer as long as
    TCP lets it: libpq turns keepalive on with the system's timers, on Linux two hours of
    silence and then nine probes 75 s apart. With them it fails after
    ``tcp_keepalive_s + KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT`` seconds of silence, and
    ``tcp_user_timeout`` (milliseconds) gives unacknowledged writes the same time (keepalive
    only probes a socket with nothing in flight; a request that cannot be sent is retransmitted
    instead, for many minutes by default).
    """
    if tcp_keepalive_s <= 0:
        return {}
    dead_after_s = tcp_keepalive_s + KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT
    wanted = {
        "keepalives": 1,
        "keepalives_idle": tcp_keepalive_s,
        "keepalives_interval": KEEPALIVE_INTERVAL_S,
        "keepalives_count": KEEPALIVE_COUNT,
        "tcp_user_timeout": dead_after_s * 1000,
    }
    given = make_url(url).query
    return {name: value for name, value in wanted.items() if name not in given}


def _postgres_options(url: str, statement_timeout_s: float) -> str:
    """libpq ``options`` with ``statement_timeout`` (milliseconds; 0 = none) after any options
    the URL itself carries (``?options=...``)."""
    given = make_url(url).query.get("options")
    existing = given if isinstance(given, str) else " ".join(given or ())
    timeout = f"-c statement_timeout={max(1, round(statement_timeout_s * 1000))}"
    return f"{existing} {timeout}".strip()


def create_db_engine(
    url: str,
    *,
    echo: bool = False,
    connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S,
    statement_timeout_s: float = 0,
    sqlite_busy_timeout_s: float = DEFAULT_SQLITE_BUSY_TIMEOUT_S,
    tcp_keepalive_s: int = DEFAULT_TCP_KEEPALIVE_S,
) -> Engine:
    """An engine for ``url`` with per-dialect settings (SQLite: WAL, a busy timeout of
    ``sqlite_busy_timeout_s`` seconds, immediate transactions; PostgreSQL: pre-ping, a connect
    timeout of ``connect_timeout_s`` seconds, TCP keepalive after ``tcp_keepalive_s`` seconds of
    silence (0: the operating system's defaults) and, when ``statement_timeout_s`` > 0, a
    server-side limit of that many seconds on every statement, lock waits included).

    For a SQLite file URL the parent folder is created, so the embedded mode needs no setup.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, echo=echo, connect_args={"check_same_thread": False})
        _configure_sqlite(engine, busy_timeout_s=sqlite_busy_timeout_s)
        return engine
    connect_args: dict[str, Any] = {}
    if "psycopg" in url:
        connect_args["connect_timeout"] = connect_timeout_s
        connect_args.update(_postgres_keepalive_args(url, tcp_keepalive_s))
        if statement_timeout_s > 0:
            # Set at connection start (libpq options): it holds for every transaction of the
            # connection, so no request can forget it, and the server enforces it even while
            # the statement waits for a lock.
            connect_args["options"] = _postgres_options(url, statement_timeout_s)
    return create_engine(url, echo=echo, pool_pre_ping=True, connect_args=connect_args)


class Database:
    """One engine plus its session factory."""

    def __init__(
        self,
        url: str,
        *,
        echo: bool = False,
        connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S,
        statement_timeout_s: float = 0,
        sqlite_busy_timeout_s: float = DEFAULT_SQLITE_BUSY_TIMEOUT_S,
        tcp_keepalive_s: int = DEFAULT_TCP_KEEPALIVE_S,
    ) -> None:
        self.url = url
        self.statement_timeout_s = statement_timeout_s
        self.engine = create_db_engine(
            url,
            echo=echo,
            connect_timeout_s=connect_timeout_s,
            statement_timeout_s=statement_timeout_s,
            sqlite_busy_timeout_s=sqlite_busy_timeout_s,
            tcp_keepalive_s=tcp_keepalive_s,
        )
        # expire_on_commit=False: objects returned from a scope stay readable after it commits.
        self.sessionmaker = sessionmaker(bind=self.engine, expire_on_commit=False)

    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, *, statement_timeout_s: float = 0
    ) -> Database:
        """The database named by ``settings`` (default: the process settings).

        ``statement_timeout_s``: the longest one statement may run, seconds (0 = no limit, what
        workers, beat, the CLI and migrations use); the API passes
        ``settings.database_statement_timeout_s``.
        """
        settings = settings or get_settings()
        return cls(
            settings.resolved_database_url(),
            connect_timeout_s=settings.database_connect_timeout_s,
            statement_timeout_s=statement_timeout_s,
            sqlite_busy_timeout_s=settings.sqlite_busy_timeout_s,
            tcp_keepalive_s=settings.database_tcp_keepalive_s,
        )

    @contextmanager
    def session_scope(self) -> Iterator[Session]:
        """A session in one transaction: commit on success, roll back on exception."""
        session = self.sessionmaker()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def dispose(self) -> None:
        """Close every pooled connection (tests, process shutdown)."""
        self.engine.dispose()


_default_database: Database | None = None


def get_database() -> Database:
    """The process-wide database from :func:`services.settings.get_settings` (created once)."""
    global _default_database
    if _default_database is None:
        _default_database = Database.from_settings()
    return _default_database


@contextmanager
def session_scope(database: Database | None = None) -> Iterator[Session]:
    """A transactional session on ``database`` (default: :func:`get_database`)."""
    with (database or get_database()).session_scope() as session:
        yield session
