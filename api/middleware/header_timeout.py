"""uvicorn's HTTP/1.1 protocol with a timeout on request headers.

uvicorn times out idle keep-alive connections, but a client that sends part of its request headers
and then stalls holds the connection (and its memory) for as long as it likes. This protocol
closes a connection whose request headers are not complete ``UNMASK_UPLOAD_READ_TIMEOUT_S``
seconds after it opened, or after the previous response on it. Bodies are timed out by
``api.middleware.request_body`` and the upload routes.

    uvicorn api.app:app --http api.middleware.header_timeout:HeaderTimeoutH11Protocol
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

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
