"""A minimal HTTP front end for a :class:`LocalBlobStore`'s presigned URLs (stdlib only).

The embedded deployment and the tests use it so that presigned GET/PUT work with any HTTP
client, exactly as against S3. The platform's API can serve the same URLs instead by calling
``LocalBlobStore.check_presigned`` in its own route.
"""

from __future__ import annotations

import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

from services.storage.blob_local import LocalBlobStore
from services.storage.errors import (
    BlobIntegrityError,
    BlobNotFoundError,
    BlobStoreError,
    PermissionDeniedError,
)


class _LimitedReader:
    """Reads at most ``remaining`` bytes of a request body (no read past Content-Length)."""

    def __init__(self, raw: object, remaining: int) -> None:
        self._raw = raw
        self.remaining = remaining

    def read(self, size: int = -1) -> bytes:
        if self.remaining <= 0:
            return b""
        n = self.remaining if size < 0 else min(size, self.remaining)
        data: bytes = self._raw.read(n)  # type: ignore[attr-defined]
        self.remaining -= len(data)
        return data


class LocalBlobServer:
    """Serves ``GET``/``PUT {base_url}/{key}?...`` for a store; runs in a daemon thread."""

    def __init__(self, store: LocalBlobStore, host: str = "127.0.0.1", port: int = 0) -> None:
        self.store = store
        handler = _make_handler(store)
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        bound_host, bound_port = self.httpd.server_address[:2]
        self.base_url = f"http://{bound_host!s}:{bound_port}/blobs"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> LocalBlobServer:
        """Start serving and point the store's presigned URLs at this server."""
        self.store.base_url = self.base_url
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


def _make_handler(store: LocalBlobStore) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: tests and the embedded mode log elsewhere

        def _parse(self, method: str) -> tuple[str, str | None] | None:
            parts = urlsplit(self.path)
            if not parts.path.startswith("/blobs/"):
                self.send_error(HTTPStatus.NOT_FOUND)
                return None
            key = unquote(parts.path[len("/blobs/") :])
            try:
                expected = store.check_presigned(method, key, dict(parse_qsl(parts.query)))
            except PermissionDeniedError as exc:
                self.send_error(HTTPStatus.FORBIDDEN, str(exc))
                return None
            except BlobStoreError as exc:
                self.send_error(HTTPStatus.BAD_REQUEST, str(exc))
                return None
            return key, expected

        def do_GET(self) -> None:
            parsed = self._parse("GET")
            if parsed is None:
                return
            key, _ = parsed
            try:
                info = store.stat(key)
                with store.open_read(key) as source:
                    self.send_response(HTTPStatus.OK)
                    self.send_header("Content-Type", info.media_type)
                    self.send_header("Content-Length", str(info.size_bytes))
                    self.end_headers()
                    while chunk := source.read(1024 * 1024):
                        self.wfile.write(chunk)
            except BlobNotFoundError as exc:
                self.send_error(HTTPStatus.NOT_FOUND, str(exc))

        def do_PUT(self) -> None:
            parsed = self._parse("PUT")
            if parsed is None:
                return
            key, expected_sha256 = parsed
            length = self.headers.get("Content-Length")
            if length is None:
                self.send_error(HTTPStatus.LENGTH_REQUIRED)
                return
            body = _LimitedReader(self.rfile, int(length))
            try:
                store.put_stream(
                    key,
                    body,  # type: ignore[arg-type]
                    media_type=self.headers.get("Content-Type") or "application/octet-stream",
                    expected_sha256=expected_sha256,
                    expected_size=int(length),
                )
            except BlobIntegrityError as exc:
                self.send_error(HTTPStatus.BAD_REQUEST, str(exc))
                return
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler
