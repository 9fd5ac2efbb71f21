"""What every page shares: the templates and their filters, rendering, the viewer, 404s."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session

from api.context import ApiContext
from api.pages.session import logout_csrf_token, viewer_of
from services.platform.identity import Principal
from services.results.keys import ResultKey
from services.vocab import ProtocolAsrState, trust_mark

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
templates = Jinja2Templates(directory=str(TEMPLATE_DIR))


# --- formatting ----------------------------------------------------------------------------------


def fmt_number(value: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals; '—' for missing or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return str(value)


def fmt_datetime(value: dt.datetime | str | None, with_time: bool = True) -> str:
    """``YYYY-MM-DD HH:MM UTC`` (or the date only)."""
    if value is None:
        return "—"
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            return str(value)
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    return value.strftime("%Y-%m-%d %H:%M UTC" if with_time else "%Y-%m-%d")


def fmt_bytes(size: int | None) -> str:
    """A byte count for people (B, KiB, MiB, GiB)."""
    if size is None:
        return "—"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def fmt_duration(seconds: float | None) -> str:
    """A duration in seconds for people: ``42 s``, ``4 min 30 s``, ``2 h 05 min``; '—' when
    unknown. Below 10 s one decimal (``0.4 s``), so a short run never reads ``0 s``."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "—"
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def fmt_result_key(key: str) -> str:
    """A stored result key (``scenario|backend[|metric]``) as a page names it."""
    return ResultKey.parse(key).label


templates.env.filters["num"] = fmt_number
templates.env.filters["duration"] = fmt_duration
templates.env.filters["when"] = fmt_datetime
templates.env.filters["bytes"] = fmt_bytes
templates.env.filters["result_key"] = fmt_result_key
# Templates compare states with the vocabulary and take the trust marks from it: a template never
# spells its own.
templates.env.globals["ProtocolAsrState"] = ProtocolAsrState
templates.env.globals["trust_mark"] = trust_mark


def page_viewer(request: Request, context: ApiContext, session: Session) -> Principal | None:
    """The signed-in team's principal (page session cookie), or None for an anonymous visitor."""
    return viewer_of(request, session, context.settings)


def render(
    request: Request,
    name: str,
    viewer: Principal | None,
    status_code: int = 200,
    **values: Any,
) -> HTMLResponse:
    """Template ``name`` for ``viewer``, never cached by shared caches."""
    logout_token = (
        logout_csrf_token(request, request.app.state.context.settings) if viewer else None
    )
    response = templates.TemplateResponse(
        request,
        name,
        {"viewer": viewer, "logout_token": logout_token, **values},
        status_code=status_code,
    )
    # Pages differ per viewer (login cookie): never shared by caches.
    response.headers["Cache-Control"] = "private, no-store"
    return response


def not_found(request: Request, viewer: Principal | None, message: str) -> HTMLResponse:
    """The 404 page with ``message``."""
    return render(request, "error.html", viewer, 404, title="Not found", message=message)


def bad_request(request: Request, viewer: Principal | None, message: str) -> HTMLResponse:
    """The 422 page with ``message`` (a query parameter the page cannot use)."""
    return render(request, "error.html", viewer, 422, title="Bad request", message=message)


def image_response(body: bytes, fmt: str, request: Request) -> Response:
    """A rendered plot (png or svg), revalidated by its content hash (``ETag``; 304 when the
    client holds it already)."""
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"Cache-Control": "private, no-cache", "ETag": etag}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(
        body, media_type="image/png" if fmt == "png" else "image/svg+xml", headers=headers
    )


async def render_plot(
    context: ApiContext, render: Callable[..., bytes], *args: Any, **kwargs: Any
) -> bytes:
    """``render(*args, **kwargs)`` (a ``services.plotting`` renderer, cached by content): the
    cached bytes at once, else drawn in a child process of the app's CPU pool
    (:attr:`ApiContext.cpu_pool`) once one of its plot slots is free, and cached here. Neither
    the wait nor the drawing holds a thread or the GIL of this process."""
    found = render.cached(*args, **kwargs)  # type: ignore[attr-defined]
    if found is not None:
        return bytes(found)
    async with context.plot_slot():
        body = await asyncio.wrap_future(context.cpu_pool.submit(render, *args, **kwargs))
    render.remember(body, *args, **kwargs)  # type: ignore[attr-defined]
    return body
