"""Keyset pagination of listings, newest first."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from services.storage.errors import ConflictError

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def keyset_page(
    session: Session, query: Any, id_column: Any, limit: int, cursor: str | None
) -> tuple[list[Any], str | None]:
    """Rows of ``query`` newest first (by ``id_column``) after ``cursor``, and the next cursor.

    The cursor is the last id of the previous page, so pages stay stable while new rows arrive
    (an offset would shift) and each page is one index range scan.
    """
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise ConflictError(f"page limit {limit} is not in 1..{MAX_PAGE_SIZE}")
    if cursor is not None:
        try:
            after_id = int(cursor)
        except ValueError:
            raise ConflictError(f"invalid page cursor {cursor!r}") from None
        query = query.where(id_column < after_id)
    rows = list(session.scalars(query.order_by(id_column.desc()).limit(limit + 1)))
    items = rows[:limit]
    return items, str(items[-1].id) if len(rows) > limit else None
