"""Helpers shared by the routers: documented error sets, scope annotations, page limits.

Who may see or change what is decided by ``services.platform.access`` (routes call it and let
``api/problems.py`` map its errors to 404/403); nothing here decides a status.
"""

from __future__ import annotations

from typing import Any

from api.problems import problem_responses
from services.platform.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE

PAGE_LIMIT_DEFAULT = DEFAULT_PAGE_SIZE
PAGE_LIMIT_MAX = MAX_PAGE_SIZE


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Problem responses of an authenticated route: 401, 403, 422, 429 (too many failed
    authentications from the caller's address), 500, plus ``statuses``."""
    return problem_responses(*sorted({401, 403, 422, 429, 500, *statuses}))


def scope(name: str) -> dict[str, Any]:
    """OpenAPI extension naming the token scope a route needs."""
    return {"x-required-scope": name}
