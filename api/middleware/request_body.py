"""Every request body (the streamed archive uploads excepted) is read under the upload read
timeout, and every JSON body is checked for values storage cannot hold, before any route runs.

- A client that stops sending its body for ``upload_read_timeout_s`` gets 408, whatever the route
  (a stalled JSON body no longer holds a connection and a worker for as long as it likes), and so
  does one whose body is not complete ``request_body_timeout_s`` after the request began (a
  body dripped a byte at a time never stalls, yet must end).
- A JSON body holding a lone UTF-16 surrogate, an integer beyond +-(2^63 - 1), a non-finite
  number (``1e309``, ``NaN``, ``Infinity``) or nesting deeper than 64 levels is 422 naming the
  field (``services.json_values``), for every route and every field, free-form objects included
  (``config``, ``config_overrides``, ``builtin.params``).

Sits inside :class:`api.middleware.body_limit.BodyLimitMiddleware`, so the body it reads is
already bounded.
"""

from __future__ import annotations

import json

import anyio
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.middleware.body_limit import BodyTooLargeError, _is_streamed_upload
from api.problems import problem_response
from services.json_values import JSON_MAX_DEPTH, json_problem

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json" or media.endswith(b"+json")
    return False


def json_body_problem(body: bytes) -> tuple[str, str] | None:
    """``(field, message)`` for a JSON body that storage cannot hold; None when it can (or when
    it is not JSON at all: the route's own parser answers that)."""
    try:
        value = json.loads(body)
    except RecursionError:
        return "body", f"nested deeper than {JSON_MAX_DEPTH} levels"
    except ValueError as exc:
        if "digits" in str(exc):  # Python's limit on integer literals (4300 digits)
            return "body", "holds an integer literal too long to read"
        return None  # not JSON: FastAPI answers 400 / 422 as before
    problem = json_problem(value)
    if problem is None:
        return None
    where, what = problem
    return (f"body.{where}" if where else "body"), what


class _BodyTimeoutError(Exception):
    """The body did not arrive in time: ``detail`` says which limit it ran past."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class RequestBodyMiddleware:
    """Read bodies under a per-chunk timeout and a total deadline; refuse JSON values storage
    cannot hold.

    ``read_timeout_s``: longest wait for the next chunk; ``body_timeout_s``: longest the whole
    body may take (both seconds).
    """

    def __init__(self, app: ASGIApp, read_timeout_s: float, body_timeout_s: float) -> None:
        self.app = app
        self.read_timeout_s = read_timeout_s
        self.body_timeout_s = body_timeout_s

    async def _read(self, receive: Receive) -> tuple[list[bytes], list[Message]]:
        """The body's chunks and the messages received, or :class:`_BodyTimeoutError`."""
        chunks: list[bytes] = []
        received: list[Message] = []
        deadline = anyio.current_time() + self.body_timeout_s
        while True:
            left = deadline - anyio.current_time()
            whole_body = left <= self.read_timeout_s  # the deadline comes before the chunk's
            try:
                with anyio.fail_after(max(0.0, min(self.read_timeout_s, left))):
                    message = await receive()
            except TimeoutError:
                got = sum(map(len, chunks))
                if whole_body:
                    raise _BodyTimeoutError(
                        f"request body not complete after {self.body_timeout_s:g} s "
                        f"(UNMASK_REQUEST_BODY_TIMEOUT_S); {got} bytes received"
                    ) from None
                raise _BodyTimeoutError(
                    f"no request body bytes for {self.read_timeout_s:g} s "
                    f"(UNMASK_UPLOAD_READ_TIMEOUT_S) after {got} bytes"
                ) from None
            received.append(message)
            if message["type"] != "http.request":
                return chunks, received  # a disconnect: hand it on, the route sees it
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return chunks, received

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") not in BODY_METHODS
            or _is_streamed_upload(scope)
        ):
            await self.app(scope, receive, send)
            return
        try:
            chunks, received = await self._read(receive)
        except _BodyTimeoutError as exc:
            response = problem_response(
                Request(scope),
                408,
                exc.detail,
                slug="request-timeout",
                title="Request timed out",
                headers={"Connection": "close"},
            )
            await response(scope, receive, send)
            return
        except BodyTooLargeError as exc:
            response = problem_response(Request(scope), 413, str(exc.detail), extra=exc.extra)
            await response(scope, receive, send)
            return
        if _is_json(scope):
            problem = json_body_problem(b"".join(chunks))
            if problem is not None:
                field, what = problem
                response = problem_response(
                    Request(scope),
                    422,
                    f"{field}: {what}",
                    extra={"errors": [{"field": field, "message": what}]},
                )
                await response(scope, receive, send)
                return
        replay = iter(received)

        async def receive_again() -> Message:
            message = next(replay, None)
            return message if message is not None else await receive()

        await self.app(scope, receive_again, send)
