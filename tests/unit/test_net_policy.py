"""The outbound network policy (services/net/policy.py): literal forms normalized, addresses
pinned, redirects kept to one origin, bodies and time bounded."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest

from services.net.policy import (
    PolicyViolation,
    fetch,
    literal_address,
    resolve,
    url_refusal,
)
from services.platform.webhooks.endpoints import validate_webhook_url
from services.storage.errors import ConflictError


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("10.0.258", "10.0.1.2"),
        ("169.254.169.254.", "169.254.169.254"),
        ("::1", "::1"),
    ],
)
def test_ip_literals_in_every_form_are_read_as_their_address(host: str, address: str) -> None:
    assert literal_address(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", ["example.org", "1.2.3.4.5", "08.1.1.1", "256.1.1.1", "a.0x10"])
def test_names_and_malformed_numbers_are_not_literals(host: str) -> None:
    assert literal_address(host) is None


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0"])
def test_non_canonical_loopback_is_refused_without_dns(
    host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_dns(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a literal must not be resolved")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    reason = url_refusal(f"http://{host}/x", allow_private=False)
    assert reason is not None and "not a globally routable" in reason
    assert isinstance(resolve(f"http://{host}/x", allow_private=False), str)
    with pytest.raises(ConflictError, match="not a globally routable"):
        validate_webhook_url(f"https://{host}/hook")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("https://a.example:99999/h", "not a valid URL"),
        ("https://a.example:0/h", "port 0"),
        ("ftp://a.example/h", "absolute"),
        ("https://user:pw@a.example/h", "credentials"),
        ("https:///h", "absolute"),
    ],
)
def test_malformed_urls_are_refused_at_creation(url: str, words: str) -> None:
    reason = url_refusal(url, allow_private=False)
    assert reason is not None and words in reason
    with pytest.raises(ConflictError):
        validate_webhook_url(url)


def test_https_can_be_required() -> None:
    assert url_refusal("http://a.example/", allow_private=True, require_https=True) is not None
    assert url_refusal("https://a.example/", allow_private=True, require_https=True) is None


def test_a_name_resolving_to_any_private_address_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        answers = ("8.8.8.8", "10.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in answers]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    reason = resolve("https://mixed.example/x", allow_private=False)
    assert isinstance(reason, str) and "10.0.0.1" in reason


# --- on loopback --------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, Any]] = {}

    def do_GET(self) -> None:
        self.routes[self.path](self)

    def log_message(self, *args: Any) -> None:
        pass


def _reply(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Any:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def _drip(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "100")
    handler.end_headers()
    with contextlib.suppress(OSError):  # the client gives up first
        for _ in range(100):
            handler.wfile.write(b"x")
            handler.wfile.flush()
            time.sleep(0.05)


def _unbounded(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.end_headers()  # no Content-Length: read until close
    with contextlib.suppress(OSError):  # the client gives up first
        for _ in range(64):
            handler.wfile.write(b"y" * 4096)


@pytest.fixture()
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port = httpd.server_address[1]
    base = f"http://127.0.0.1:{port}"
    _Handler.routes = {
        "/ok": _reply(200, b"hello"),
        "/same": _reply(302, headers={"Location": "/ok"}),
        "/other": _reply(302, headers={"Location": f"http://localhost:{port}/ok"}),
        "/private": _reply(307, headers={"Location": "http://10.0.0.1/ok"}),
        "/big": _reply(200, b"z" * 5000),
        "/unbounded": _unbounded,
        "/drip": _drip,
    }
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield base
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_loopback_needs_the_escape_hatch(server: str) -> None:
    with pytest.raises(PolicyViolation, match="not a globally routable"):
        fetch("GET", f"{server}/ok", allow_private=False)
    assert fetch("GET", f"{server}/ok", allow_private=True).content == b"hello"


def test_redirects_stay_on_one_origin(server: str) -> None:
    followed = fetch("GET", f"{server}/same", allow_private=True)
    assert followed.content == b"hello" and followed.url.endswith("/ok")
    # localhost is the same machine but another origin: not followed.
    with pytest.raises(PolicyViolation, match="another origin"):
        fetch("GET", f"{server}/other", allow_private=True)
    with pytest.raises(PolicyViolation, match="another origin"):
        fetch("GET", f"{server}/private", allow_private=True)


def test_bodies_are_bounded_by_declared_and_streamed_size(server: str) -> None:
    with pytest.raises(PolicyViolation, match="5000 bytes"):
        fetch("GET", f"{server}/big", allow_private=True, max_bytes=1000)
    with pytest.raises(PolicyViolation, match="more than the 10000 bytes"):
        fetch("GET", f"{server}/unbounded", allow_private=True, max_bytes=10_000)


def test_a_slow_drip_hits_the_total_deadline(server: str) -> None:
    started = time.monotonic()
    with pytest.raises(PolicyViolation, match="in time"):
        fetch("GET", f"{server}/drip", allow_private=True, timeout_s=2.0, deadline_s=0.5)
    assert time.monotonic() - started < 2.0


def test_https_verifies_the_certificate_of_the_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", 0))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(200, content=b"k"))
    with httpx.Client(transport=transport) as client:
        got = fetch("GET", "https://keys.example/jwks", allow_private=False, client=client)
    assert got.content == b"k" and got.url == "https://keys.example/jwks"
    assert str(seen[0].url) == "https://93.184.215.14/jwks"
    assert seen[0].headers["host"] == "keys.example"
    assert seen[0].extensions["sni_hostname"] == "keys.example"
