"""Column types that behave the same on PostgreSQL and SQLite.

SQLite has no time zones and no JSONB; these types hide that so the models (and the code that
reads them) see timezone-aware UTC datetimes and JSON everywhere. Alembic renders them as their
plain SQLAlchemy equivalents (see ``migrations/env.py``), so migrations do not import this module.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine


def utc_now() -> dt.datetime:
    """The current time as a timezone-aware UTC datetime."""
    return dt.datetime.now(dt.UTC)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timestamp stored in UTC and always returned timezone-aware (UTC).

    Naive datetimes are refused on the way in: a naive value is ambiguous, and silently assuming a
    zone is how off-by-hours bugs enter a database.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware (UTC) datetime")
        utc = value.astimezone(dt.UTC)
        # SQLite stores text; keep it naive-UTC there so lexical order equals time order.
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(
        self, value: dt.datetime | None, dialect: Dialect
    ) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


def json_type() -> TypeEngine[Any]:
    """JSON on SQLite, JSONB on PostgreSQL (indexable, compact, compares by value)."""
    return JSON().with_variant(JSONB(), "postgresql")
