"""Alembic environment: runs migrations against the URL from the command line or Settings.

URL precedence: ``config.attributes["connection"]`` (an open connection, used by
``services.storage.migrate``), ``config.attributes["database_url"]``, ``-x url=...``, then
``Settings().resolved_database_url()`` (``UNMASK_DATABASE_URL``; SQLite under data_dir by
default).
"""

from __future__ import annotations

from logging.config import fileConfig
from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import Connection

from services.settings import Settings
from services.storage.db import create_db_engine
from services.storage.migrate import take_migration_lock
from services.storage.models import Base
from services.storage.types import UTCDateTime

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def database_url() -> str:
    """The URL to migrate (see the module docstring for the precedence)."""
    explicit = config.attributes.get("database_url")
    if explicit:
        return str(explicit)
    x_url = context.get_x_argument(as_dictionary=True).get("url")
    if x_url:
        return x_url
    return Settings().resolved_database_url()


def render_item(type_: str, obj: Any, autogen_context: AutogenContext) -> str | Literal[False]:
    """Render our custom column types as plain SQLAlchemy types (migrations stay self-contained)."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure(connection: Connection) -> None:
    if connection.dialect.name == "sqlite":
        # Batch migrations drop and recreate tables; with foreign keys on, dropping a parent
        # table would cascade-delete its children's rows. (A no-op inside a transaction, so
        # it is issued on the DBAPI connection, before Alembic begins one: through SQLAlchemy,
        # the engine's "begin" hook would emit BEGIN first.)
        if not connection.in_transaction():
            cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            cursor.execute("PRAGMA foreign_keys=OFF")
            cursor.close()
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # Batch mode turns ALTERs into copy-and-rename on SQLite, which cannot ALTER much.
        render_as_batch=True,
        render_item=render_item,
        compare_type=True,
        compare_server_default=True,
    )


def run_migrations_offline() -> None:
    """Emit SQL to stdout (``alembic upgrade head --sql``)."""
    context.configure(
        url=database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
        render_item=render_item,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Migrate over a live connection."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            take_migration_lock(connection)
            context.run_migrations()
        return
    engine = create_db_engine(database_url())
    try:
        with engine.connect() as conn:
            _configure(conn)
            with context.begin_transaction():
                # Concurrent runs (API replicas, two `migrate` jobs) queue here; see the lock.
                take_migration_lock(conn)
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
