"""One request-body limit for every route except the streamed archive uploads.

JSON (and form) bodies are read whole before they are validated, so without a bound a client
makes the server buffer and parse any amount. :class:`BodyLimitMiddleware` answers 413 (problem
details with ``limit_bytes``) as soon as the declared ``Content-Length`` or the bytes received so
far exceed ``UNMASK_MAX_JSON_BODY_BYTES``, before the body is parsed. The archive upload routes
stream their bodies to the blob store under their own limit (``UNMASK_MAX_ARCHIVE_BYTES``,
``api/routes/archive_transfer.py``) and are left alone.
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.problems import problem_response

# Routes whose body is streamed to the blob store with their own size limit.
STREAMED_UPLOADS: tuple[tuple[str, str], ...] = (
    ("POST", "/v1/submissions/archive"),
    ("PUT", "/v1/blobs/"),
)


class BodyTooLargeError(HTTPException):
    """413 raised while the body is being received (no or a false ``Content-Length``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=too_large_detail(limit))
        self.extra: dict[str, Any] = {"limit_bytes": limit}


def too_large_detail(limit: int) -> str:
    return (
        f"request body is larger than the limit of {limit} bytes (UNMASK_MAX_JSON_BODY_BYTES); "
        "archives go through POST /v1/submissions/archive or /v1/submissions/uploads"
    )


def _is_streamed_upload(scope: Scope) -> bool:
    method, path = scope.get("method", ""), scope.get("path", "")
    return any(method == m and path.startswith(p) for m, p in STREAMED_UPLOADS)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimitMiddleware:
    """Answer 413 for request bodies above ``max_bytes`` (streamed archive uploads excepted)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _is_streamed_upload(scope):
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            # Refused before a byte of the body is read.
            response = problem_response(
                Request(scope),
                413,
                too_large_detail(limit),
                extra={"limit_bytes": limit},
            )
            await response(scope, receive, send)
            return
        received = 0

        async def receive_bounded() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # An HTTPException: FastAPI re-raises it from body parsing, and the problem
                    # handler (api/problems.py) answers it.
                    raise BodyTooLargeError(limit)
            return message

        await self.app(scope, receive_bounded, send)
