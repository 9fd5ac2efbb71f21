"""Row helpers shared by the platform's aggregates: a row by id, rows counted in a window."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from services.storage.errors import NotFoundError

RowT = TypeVar("RowT")


def get_row(
    session: Session,
    model: type[RowT],
    row_id: int,
    *,
    lock: bool = False,
    noun: str | None = None,
) -> RowT:
    """The ``model`` row with primary key ``row_id`` or :class:`NotFoundError`.

    ``lock``: ``SELECT ... FOR UPDATE`` on PostgreSQL, and the session's copy is refreshed (a
    locked read must not return what the session held before the lock). ``noun`` names the
    entity for people ("token" -> "token 7 not found"); without it the message names the table.
    """
    row = session.get(model, row_id, with_for_update=lock, populate_existing=lock)
    if row is None:
        if noun is not None:
            raise NotFoundError(f"{noun} {row_id} not found")
        table: Any = getattr(model, "__tablename__", model.__name__)
        raise NotFoundError(f"{table}: no row with id {row_id}")
    return row


@dataclass(frozen=True)
class WindowUsage:
    """How many rows count against a quota, and when the oldest of them was created."""

    count: int
    oldest_at: dt.datetime | None
