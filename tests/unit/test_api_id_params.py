"""Every id in a path or query, on every route (JSON and pages), is the one bounded id type
(``api.schemas.DbId``: 1 .. 2**31 - 1, PostgreSQL's INTEGER), so a larger one is a 422 naming
the bound, never a 500 from the database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import annotated_types as at
from fastapi.routing import APIRoute

from api.app import create_app
from api.schemas import DB_ID_MAX
from services.settings import Settings

# Integer parameters that are not ids (page sizes, character counts).
NOT_IDS = {"limit", "log_chars"}


def _routes(routes: list[Any]) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):  # an included router (FastAPI >= 0.120)
            yield from _routes(route.original_router.routes)
        elif hasattr(route, "routes"):
            yield from _routes(route.routes)


def _params(dependant: Any) -> Iterator[Any]:
    yield from dependant.path_params
    yield from dependant.query_params
    for sub in dependant.dependencies:
        yield from _params(sub)


def _bounds(field_info: Any) -> tuple[Any, Any]:
    metadata = list(field_info.metadata)
    for arg in getattr(field_info.annotation, "__args__", ()):  # DbId | None
        metadata += getattr(arg, "__metadata__", ())
    low = [m.ge for m in metadata if isinstance(m, at.Ge)]
    high = [m.le for m in metadata if isinstance(m, at.Le)]
    return (low[0] if low else None, high[0] if high else None)


def _is_int(field_info: Any) -> bool:
    annotation = field_info.annotation
    return annotation is int or int in getattr(annotation, "__args__", ())


def test_every_integer_path_or_query_parameter_is_a_bounded_id() -> None:
    app = create_app(Settings(_env_file=None), senders={})  # type: ignore[call-arg]
    checked, wrong = 0, []
    for route in _routes(app.routes):
        for param in _params(route.dependant):
            if param.name in NOT_IDS or not _is_int(param.field_info):
                continue
            checked += 1
            if _bounds(param.field_info) != (1, DB_ID_MAX):
                wrong.append(f"{route.path} {param.name}: {_bounds(param.field_info)}")
    assert checked >= 40  # the walk reaches the pages and the JSON routes
    assert not wrong, f"use api.schemas.DbId for these ids: {wrong}"
