"""Webhook targets: globally routable addresses only, CR/LF refused at creation, and delivery
connects to the address that was checked (services/platform/webhooks/targets.py)."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import httpx
import pytest

from services.net.policy import address_refusal
from services.platform.webhooks import delivery
from services.platform.webhooks.endpoints import validate_webhook_url
from services.platform.webhooks.targets import resolve_target
from services.storage.errors import ConflictError


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "100.64.0.1",  # shared address space (carrier-grade NAT, cloud metadata services)
        "100.100.100.200",
        "169.254.169.254",
        "192.0.2.1",
        "::1",
        "fd00::1",
        "fe80::1",
        "2002::1",  # 6to4 of 0.0.0.0
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "::ffff:127.0.0.1",
        "224.0.0.1",
    ],
)
def test_non_global_addresses_are_refused(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is not None
    with pytest.raises(ConflictError, match=r"not a globally routable|carries the IPv4"):
        host = f"[{address}]" if ":" in address else address
        validate_webhook_url(f"https://{host}/hook")


@pytest.mark.parametrize("address", ["8.8.8.8", "2606:4700::1111", "2002:808:808::1"])
def test_global_addresses_are_allowed(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "url", ["https://a.example/h\r\nX-Injected: 1", "https://a.example/\nh", "https://a b/"]
)
def test_control_characters_are_refused_at_creation(url: str) -> None:
    with pytest.raises(ConflictError, match="control or whitespace character"):
        validate_webhook_url(url)


def test_delivery_connects_to_the_checked_address(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter([["93.184.215.14"], ["127.0.0.1"]])  # a rebinding DNS server

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in next(answers)]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    target = resolve_target("https://hooks.example:8443/x?y=1", allow_private=False)
    assert not isinstance(target, str)
    assert target.url == "https://93.184.215.14:8443/x?y=1"
    assert target.host_header == "hooks.example:8443" and target.sni_hostname == "hooks.example"
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(204))
    with httpx.Client(transport=transport) as client:
        record = delivery._post(target, "whsec_" + "A" * 44, "msg_1", b"{}", 5.0, client)
    assert record.status_code == 204
    assert str(seen[0].url) == "https://93.184.215.14:8443/x?y=1"
    assert seen[0].headers["host"] == "hooks.example:8443"
    assert seen[0].extensions["sni_hostname"] == "hooks.example"
    # The second (rebound) answer was never asked for.
    assert next(answers) == ["127.0.0.1"]


@pytest.mark.parametrize(
    "host", ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0", "0x0a.1", "10.0x1.2"]
)
def test_non_canonical_ipv4_literals_are_normalized_before_the_check(host: str) -> None:
    with pytest.raises(ConflictError, match="not a globally routable"):
        validate_webhook_url(f"https://{host}/hook")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("https://hooks.example:99999/h", "Port out of range"),
        ("https://hooks.example:0/h", "port 0 is not a valid port"),
        ("https://hooks.example:x/h", "not a valid URL"),
        ("ftp://hooks.example/h", "absolute http"),
    ],
)
def test_urls_are_parsed_completely_at_creation(url: str, words: str) -> None:
    with pytest.raises(ConflictError, match=words):
        validate_webhook_url(url, allow_private=True)


def test_host_names_that_look_hexadecimal_stay_host_names() -> None:
    assert validate_webhook_url("https://bad.cafe/hook") == "https://bad.cafe/hook"
    assert validate_webhook_url("https://8.8.8.8/hook") == "https://8.8.8.8/hook"
