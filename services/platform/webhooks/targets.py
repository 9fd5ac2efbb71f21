"""Where a webhook may be delivered: globally routable addresses only, and the very address that
was checked.

A webhook URL names a host the platform will connect to on a team's behalf, so it must not reach
inside the platform's network (server-side request forgery). An address is allowed only if it is
globally routable (``ipaddress``'s ``is_global``: no loopback, private, link-local, shared address
space 100.64.0.0/10, documentation or reserved ranges) and, for the IPv6 forms that carry an IPv4
address (IPv4-mapped, 6to4 2002::/16, NAT64 64:ff9b::/96, Teredo), if the carried address is too.

At creation (:func:`url_refusal`) a URL with control characters or whitespace (CR/LF would split
the request) or a literal non-global address is refused. At delivery (:func:`resolve_target`) the
host name is resolved once, every address checked, and the POST goes to the first checked address
itself, with the original ``Host`` header and TLS server name, so a second DNS answer between
check and connect (DNS rebinding) cannot redirect it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f]")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_refusal(address: IPAddress) -> str | None:
    """Why ``address`` may not be the target of a webhook, or None when it is globally routable."""
    if not address.is_global or address.is_multicast:
        return f"{address} is not a globally routable address"
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None and (not inner.is_global or inner.is_multicast):
            return f"{address} carries the IPv4 address {inner}, which is not globally routable"
    return None


_NUMERIC_HOST = re.compile(r"^[0-9a-fA-FxX.]+$")


def _literal(host: str) -> IPAddress | None:
    """The address a literal host names, or None for a host name. IPv4 in every form a resolver
    accepts (``127.1``, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``0``) is normalized
    first, so a check cannot be passed by spelling an address differently."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def url_parts(url: str) -> tuple[str, str, int | None] | str:
    """(scheme, host, port) of an absolute http(s) URL, or, as a string, why it is not one
    (a port outside 1..65535 included: a permanent error, never retried)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"webhook url is not a valid URL: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"webhook url {url[:80]!r} must be an absolute http:// or https:// URL"
    if port == 0:
        return "webhook url port must be 1-65535"
    return parts.scheme, parts.hostname, port


def url_refusal(url: str, *, allow_private: bool) -> str | None:
    """Why ``url`` may not be registered (checked without DNS), or None."""
    found = _UNSAFE_URL_CHARS.search(url)
    if found:
        return (
            f"webhook url contains the control or whitespace character U+{ord(found.group()):04X}"
        )
    parsed = url_parts(url)
    if isinstance(parsed, str):
        return parsed
    address = _literal(parsed[1])
    if address is not None and not allow_private:
        reason = address_refusal(address)
        if reason is not None:
            return f"webhook url host {reason}"
    return None


@dataclass(frozen=True)
class WebhookTarget:
    """What to connect to: ``url`` with the checked IP address as its host, the original
    ``host_header`` and, for https, the TLS ``sni_hostname`` (the certificate's name)."""

    url: str
    host_header: str
    sni_hostname: str | None


def resolve_target(url: str, *, allow_private: bool) -> WebhookTarget | str:
    """The checked target of ``url`` or, as a string, why it may not be called."""
    parsed = url_parts(url)
    if isinstance(parsed, str):
        return parsed
    parts = urlsplit(url)
    host = parsed[1]
    try:
        infos = socket.getaddrinfo(host, parts.port, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        return f"cannot resolve {host!r}: {exc}"
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if not addresses:
        return f"{host!r} has no address"
    if not allow_private:
        for address in addresses:
            reason = address_refusal(address)
            if reason is not None:
                return f"{host!r} resolves to {reason}"
    address = addresses[0]
    shown = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    netloc = shown if parts.port is None else f"{shown}:{parts.port}"
    host_header = parts.netloc.rsplit("@", 1)[-1]
    pinned = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    return WebhookTarget(pinned, host_header, host if parts.scheme == "https" else None)
