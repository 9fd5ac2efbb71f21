"""A TCP proxy on loopback that injects faults between a client and a server (the S3 server).

Modes (:class:`FaultProxy.mode`, applied to connections opened after it is set; setting it drops
the open ones, so a client's pooled connection meets the new mode at once):

- ``pass``: bytes flow both ways.
- ``stall``: the client's bytes are read and dropped; nothing ever comes back (a service that
  accepts connections but never answers).
- ``slow``: like ``pass``, but each chunk of the answer waits ``delay_s`` seconds first.
- ``cut_response``: the first ``limit_bytes`` of the answer pass, then both sides are closed
  (the server died while a body was being read).
- ``cut_request``: the first ``limit_bytes`` of the request pass, then both sides are closed
  (the server died during an upload).
- ``http_503``: every request is answered ``503 Service Unavailable`` by the proxy itself.

:meth:`FaultProxy.stop` closes the listening socket: connections are refused (a stopped server).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Literal

Mode = Literal["pass", "stall", "slow", "cut_response", "cut_request", "http_503"]

_CHUNK = 16 * 1024
_UNAVAILABLE_BODY = (
    b"<Error><Code>ServiceUnavailable</Code><Message>injected by the test</Message></Error>"
)
_SERVICE_UNAVAILABLE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
    + f"Content-Length: {len(_UNAVAILABLE_BODY)}\r\nConnection: close\r\n\r\n".encode()
    + _UNAVAILABLE_BODY
)


class FaultProxy:
    """Forwards ``127.0.0.1:<port>`` to ``target`` (host, port) with the faults of :attr:`mode`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.limit_bytes = 64 * 1024
        self.delay_s = 0.5
        self._mode: Mode = "pass"
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, value: Mode) -> None:
        with self._lock:
            self._mode = value
            sockets = list(self._open)
            self._open.clear()
        for sock in sockets:
            _close(sock)

    def stop(self) -> None:
        """Refuse new connections and drop the open ones."""
        _close(self._listener)
        self.mode = "pass"  # drops the open connections

    def _track(self, *socks: socket.socket) -> None:
        with self._lock:
            self._open.update(socks)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client, self._mode), daemon=True).start()

    def _serve(self, client: socket.socket, mode: Mode) -> None:
        self._track(client)
        if mode in ("stall", "http_503"):
            self._answer_alone(client, mode)
            return
        try:
            upstream = socket.create_connection(self.target, timeout=10)
        except OSError:
            _close(client)
            return
        self._track(upstream)
        request_limit = self.limit_bytes if mode == "cut_request" else None
        response_limit = self.limit_bytes if mode == "cut_response" else None
        delay = self.delay_s if mode == "slow" else 0.0
        forward = threading.Thread(
            target=_pump, args=(client, upstream, request_limit, 0.0), daemon=True
        )
        forward.start()
        _pump(upstream, client, response_limit, delay)
        forward.join(30)

    def _answer_alone(self, client: socket.socket, mode: Mode) -> None:
        try:
            received = b""
            while True:
                data = client.recv(_CHUNK)
                if not data:
                    break
                if mode == "stall":
                    continue
                received += data
                # Answer each request once its headers arrived (its body, if any, is dropped).
                if b"\r\n\r\n" in received:
                    client.sendall(_SERVICE_UNAVAILABLE)
                    break
        except OSError:
            pass
        finally:
            _close(client)


def _pump(source: socket.socket, sink: socket.socket, limit: int | None, delay_s: float) -> None:
    """Copy ``source`` to ``sink`` (at most ``limit`` bytes, then close both)."""
    sent = 0
    try:
        while True:
            data = source.recv(_CHUNK)
            if not data:
                break
            if delay_s:
                time.sleep(delay_s)
            if limit is not None and sent + len(data) >= limit:
                sink.sendall(data[: max(0, limit - sent)])
                break
            sink.sendall(data)
            sent += len(data)
    except OSError:
        pass
    finally:
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
