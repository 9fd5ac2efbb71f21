"""Faults of the platform itself, answered as what they are instead of a 500.

- A full disk (``ENOSPC``, ``EDQUOT``) anywhere while handling a request (spooling an upload,
  writing a blob and its metadata) is 507 ``insufficient-storage``: the request stored nothing
  (every writer cleans up after itself) and may be retried once space is freed.
- A lost connection to the database or the blob store (an administrator terminated the
  database's connections, a restart, a network cut) is 503 with ``Retry-After``, like every other
  transient fault: the request may be retried as it is.
- A statement the database cancelled at the API's statement timeout
  (``UNMASK_DATABASE_STATEMENT_TIMEOUT_S``: a lock held elsewhere, a database that stopped
  answering) is the same 503: the request's transaction was rolled back.

Anything else stays the generic 500 of ``api.problems``.
"""

from __future__ import annotations

import errno
import inspect
import logging
from typing import cast

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from api.problems import problem_response
from services.platform.jobs.host import is_transient_error, storage_transient_errors

logger = logging.getLogger("unmask.api")

DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})

TRANSIENT_RETRY_AFTER_S = 5
"""``Retry-After`` of a 503 after a lost database or blob store connection, seconds."""


def disk_full_cause(exc: BaseException) -> OSError | None:
    """The ``ENOSPC``/``EDQUOT`` error behind ``exc`` (itself, its cause or context), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def statement_timed_out(exc: BaseException) -> bool:
    """Whether the database cancelled a statement of ``exc``'s chain (SQLSTATE 57014,
    ``query_canceled``: the statement timeout, or an administrator's cancel)."""
    from psycopg.errors import QueryCanceled

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, QueryCanceled):  # SQLAlchemy's error has it as __cause__
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def pool_exhausted(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLAlchemy's pool timeout: every connection of this process's pool was
    in use for the pool's whole wait (a burst of requests, not a fault of the request)."""
    from sqlalchemy.exc import TimeoutError as PoolTimeoutError

    return isinstance(exc, PoolTimeoutError)


def fault_response(request: Request, exc: BaseException) -> JSONResponse | None:
    """The 507 or 503 answer for a platform fault, or None when ``exc`` is not one."""
    if pool_exhausted(exc):
        logger.warning("database pool exhausted during %s %s", request.method, request.url.path)
        return problem_response(
            request,
            503,
            "the server is busy: every database connection is in use; nothing was changed. "
            f"Retry in {TRANSIENT_RETRY_AFTER_S} s",
            headers={"Retry-After": str(TRANSIENT_RETRY_AFTER_S)},
        )
    if disk_full_cause(exc) is not None:
        logger.error("disk full during %s %s: %r", request.method, request.url.path, exc)
        return problem_response(
            request,
            507,
            "the server's storage is full; nothing of this request was stored. Try again later "
            "(the operator has been alerted by the readiness probe)",
            slug="insufficient-storage",
            title="Insufficient storage",
        )
    if is_transient_error(exc, storage_transient_errors()):
        logger.warning("transient fault during %s %s: %r", request.method, request.url.path, exc)
        what = (
            "the database did not answer in time (a statement ran past the server's limit)"
            if statement_timed_out(exc)
            else "lost the connection to a platform service (database or blob store)"
        )
        return problem_response(
            request,
            503,
            f"{what}; nothing was changed. Retry in {TRANSIENT_RETRY_AFTER_S} s",
            headers={"Retry-After": str(TRANSIENT_RETRY_AFTER_S)},
        )
    return None


def install_fault_handlers(app: FastAPI) -> None:
    """Answer disk-full and lost-connection errors as 507 / 503 (module docstring).

    Registered for the exception classes that carry them, so that every other error still
    reaches the generic handler of ``api.problems``.
    """
    from psycopg import Error as PsycopgError
    from sqlalchemy.exc import SQLAlchemyError

    generic = app.exception_handlers[Exception]

    async def _fault(request: Request, exc: Exception) -> JSONResponse:
        answer = fault_response(request, exc)
        if answer is not None:
            return answer
        response = generic(request, exc)
        if inspect.isawaitable(response):
            response = await response
        return cast(JSONResponse, response)

    for kind in (OSError, SQLAlchemyError, PsycopgError):
        app.add_exception_handler(kind, _fault)
