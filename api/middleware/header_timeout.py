"""uvicorn's HTTP/1.1 protocol with a timeout on request headers, answering requests it cannot
parse with a problem document.

uvicorn times out idle keep-alive connections, but a client that sends part of its request headers
and then stalls holds the connection (and its memory) for as long as it likes. This protocol
closes a connection whose request headers are not complete ``UNMASK_UPLOAD_READ_TIMEOUT_S``
seconds after it opened, or after the previous response on it. Bodies are timed out by
``api.middleware.request_body`` and the upload routes.

A request the HTTP parser refuses (a malformed request line or header, a ``Content-Length`` that
is not a number) never reaches the app; uvicorn answers it with a plain-text 400. This protocol
answers it as the app answers every error: a 400 ``application/problem+json`` document.

Every API server runs with it (``api.server.server_options``; ``python -m api.server``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from api.problems import PROBLEM_MEDIA_TYPE, problem_body
from services.settings import get_settings


class HeaderTimeoutH11Protocol(H11Protocol):
    """``H11Protocol`` that closes connections whose request headers stall."""

    header_timeout_s: float | None = None  # None: the process settings' upload read timeout

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        timeout = self.header_timeout_s
        if timeout is None:
            timeout = get_settings().upload_read_timeout_s
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(timeout, self._headers_timed_out)

    def _cancel_header_timer(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()  # headers never completed: nothing to answer

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # a whole request line and headers arrived
            self._cancel_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()  # the next request on this keep-alive connection

    def connection_lost(self, exc: Any) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """A request the parser refused (``msg``: uvicorn's reason), answered with a problem
        document and the connection closed (its framing is lost)."""
        # The request's target was not read (or is the previous request's): no instance path.
        body = json.dumps(problem_body(400, f"malformed HTTP request: {msg}", "")).encode()
        headers = [
            (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()
