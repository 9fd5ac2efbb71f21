"""Errors as RFC 9457 problem details (``application/problem+json``), never a stack trace.

Every error response has ``type``, ``title``, ``status``, ``detail`` (a sentence naming the
problem: the field, parameter, object or limit at fault) and ``instance`` (the request path).
Validation errors add ``errors`` (one entry per bad field); quota errors add ``limit`` and
``used``. The domain's exceptions map to statuses here, so route code raises what it means
(``NotFoundError``, ``ConfigError``, ...) and never builds responses for errors itself:
``services.platform.access.AccessDeniedError`` is a 403, ``services.platform.quotas.
QuotaExceededError`` a 429 with ``Retry-After``.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from api.schemas.problems import Problem
from services.errors import InvalidFieldError, InvalidInputError
from services.platform.access import AccessDeniedError
from services.platform.quotas import QuotaExceededError
from services.storage.errors import (
    AuthenticationError,
    BlobIntegrityError,
    ConflictError,
    IdempotencyConflictError,
    NotFoundError,
    PermissionDeniedError,
)

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_TYPE_PREFIX = "urn:unmask:problem:"

logger = logging.getLogger("unmask.api")

# status -> (type slug, title)
_STANDARD: dict[int, tuple[str, str]] = {
    400: ("bad-request", "Bad request"),
    401: ("unauthorized", "Authentication required"),
    403: ("forbidden", "Permission denied"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    409: ("conflict", "Conflict"),
    411: ("length-required", "Length required"),
    413: ("payload-too-large", "Payload too large"),
    415: ("unsupported-media-type", "Unsupported media type"),
    422: ("validation-error", "Invalid request"),
    429: ("quota-exceeded", "Quota exceeded"),
    500: ("internal-error", "Internal server error"),
    503: ("service-unavailable", "Service unavailable"),
    507: ("insufficient-storage", "Insufficient storage"),
}


class ApiProblem(Exception):
    """Raised by route code for a precise problem response (status, slug, detail, extras)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        slug: str | None = None,
        title: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        default_slug, default_title = _STANDARD.get(status, ("error", "Error"))
        self.status = status
        self.detail = detail
        self.slug = slug or default_slug
        self.title = title or default_title
        self.headers = headers or {}
        self.extra = extra or {}


MAX_DETAIL_CHARS = 500
"""A problem's ``detail`` and each field message quote at most this many characters (a
message that echoes a huge value names its length instead of repeating it)."""
MAX_FIELD_ERRORS = 20
"""Field errors listed in a 422 (the rest are counted)."""


def short(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """``text``, or its first ``limit`` characters and how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters in all)"


def problem_response(
    request: Request,
    status: int,
    detail: str,
    *,
    slug: str | None = None,
    title: str | None = None,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> JSONResponse:
    """A ``application/problem+json`` response for ``request``."""
    default_slug, default_title = _STANDARD.get(status, ("error", "Error"))
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE_PREFIX + (slug or default_slug),
        "title": title or default_title,
        "status": status,
        "detail": short(detail),
        "instance": request.url.path,
    }
    body.update(extra or {})
    return JSONResponse(
        _encodable(body), status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE
    )


def _encodable(value: Any) -> Any:
    """``value`` with every string UTF-8 encodable: a message that echoes a lone surrogate of the
    request shows it escaped (``\\ud800``) instead of failing to render."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(v) for v in value]
    return value


def _status_of(exc: InvalidInputError) -> tuple[int, str | None]:
    # Most specific first: IdempotencyConflictError is a ConflictError, BlobNotFoundError both a
    # BlobStoreError and a NotFoundError.
    if isinstance(exc, IdempotencyConflictError):
        return 409, "idempotency-key-reused"
    if isinstance(exc, NotFoundError):
        return 404, None
    if isinstance(exc, AuthenticationError):
        return 401, None
    if isinstance(exc, AccessDeniedError | PermissionDeniedError):
        return 403, None
    if isinstance(exc, QuotaExceededError):
        return 429, None
    if isinstance(exc, ConflictError):
        return 409, None
    if isinstance(exc, BlobIntegrityError):
        return 422, "integrity-error"
    return 422, None


def _headers_and_extra(
    exc: InvalidInputError, status: int
) -> tuple[dict[str, str] | None, dict[str, Any] | None]:
    """Response headers and extra problem members of a domain error."""
    if isinstance(exc, QuotaExceededError):
        return (
            {"Retry-After": str(max(1, exc.retry_after_s))},
            {
                "quota": exc.quota,
                "limit": exc.limit,
                "used": exc.used,
                "retry_after_s": exc.retry_after_s,
            },
        )
    # An ID token refused or not allowed (OpenID Connect exchange): the claim at fault.
    claim = getattr(exc, "claim", None)
    extra = {"claim": claim} if isinstance(claim, str) else None
    if status == 401:
        return {"WWW-Authenticate": 'Bearer realm="unmask"'}, extra
    if isinstance(exc, InvalidFieldError):
        return None, {"errors": [{"field": exc.field, "message": exc.message}]}
    return None, extra


def _field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(part) for part in loc) or "(request)"


def _validation_problem(request: Request, exc: RequestValidationError) -> JSONResponse:
    fields: list[dict[str, str]] = []
    body = exc.body if isinstance(exc.body, dict) else {}
    for error in exc.errors():
        loc = list(error.get("loc", ()))
        # A discriminated union puts the tag into the location (body.container.container.image
        # for kind=container); the client's field is body.container.image.
        if len(loc) > 2 and loc[0] == "body" and loc[1] == body.get("kind"):
            del loc[1]
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        fields.append({"field": short(_field_name(loc), 200), "message": short(message)})
    if fields:
        first = fields[0]
        more = f" (and {len(fields) - 1} more)" if len(fields) > 1 else ""
        detail = f"{first['field']}: {first['message']}{more}"
    else:
        detail = "the request is invalid"
    return problem_response(request, 422, detail, extra={"errors": fields[:MAX_FIELD_ERRORS]})


def install_problem_handlers(app: FastAPI) -> None:
    """Route every error through :func:`problem_response`."""

    @app.exception_handler(ApiProblem)
    async def _api_problem(request: Request, exc: ApiProblem) -> JSONResponse:
        return problem_response(
            request,
            exc.status,
            exc.detail,
            slug=exc.slug,
            title=exc.title,
            headers=exc.headers,
            extra=exc.extra,
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_problem(request, exc)

    @app.exception_handler(InvalidInputError)
    async def _invalid_input(request: Request, exc: InvalidInputError) -> JSONResponse:
        status, slug = _status_of(exc)
        headers, extra = _headers_and_extra(exc, status)
        return problem_response(request, status, str(exc), slug=slug, headers=headers, extra=extra)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404 and exc.detail == "Not Found":
            detail = f"no route {request.method} {request.url.path}"
        elif exc.status_code == 405:
            detail = f"method {request.method} is not allowed on {request.url.path}"
        else:
            detail = str(exc.detail)
        return problem_response(
            request,
            exc.status_code,
            detail,
            headers=getattr(exc, "headers", None),
            extra=getattr(exc, "extra", None),
        )

    @app.exception_handler(ClientDisconnect)
    async def _client_disconnect(request: Request, exc: ClientDisconnect) -> Response:
        # Not our fault and nobody is left to answer: one line, no traceback.
        logger.warning("client disconnected during %s %s", request.method, request.url.path)
        return Response(status_code=400)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # The trace goes to the server log only; the client learns that it was our fault.
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem_response(
            request,
            500,
            f"the server failed while handling {request.method} {request.url.path}; "
            "the error was logged",
        )


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entries documenting ``statuses`` with the :class:`Problem` model."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        _, title = _STANDARD.get(status, ("error", "Error"))
        if status == 429:  # one status, two causes: a team quota, or the auth-failure limit
            title = "Too many requests: a quota, or too many failed authentications"
        out[status] = {"model": Problem, "description": f"{title} (problem details)"}
    return out
