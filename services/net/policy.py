"""The outbound network policy: where the platform may connect when a URL comes from a user.

A URL given by a team (a webhook, an OpenID Connect issuer's key set, an anonymizer endpoint)
names a host the platform will connect to on that team's behalf, so it must not reach inside the
platform's network (server-side request forgery). The rules, in one place:

- **Global addresses only.** An address is allowed only if it is globally routable
  (``ipaddress``'s ``is_global``: no loopback, private, link-local, shared address space
  100.64.0.0/10, documentation or reserved ranges; no multicast) and, for the IPv6 forms that carry
  an IPv4 address (IPv4-mapped, 6to4 2002::/16, NAT64 64:ff9b::/96, Teredo), if the carried address
  is too.
- **Literals normalized.** A host that is an IPv4 literal in any of the forms a resolver accepts
  (``127.1``, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``0``; WHATWG URL rules) is read as
  the address it stands for before the check, so it is refused without a DNS lookup.
- **Resolved once, pinned.** :func:`resolve` looks the host name up once, checks every address,
  and the request goes to the first checked address itself (the original ``Host`` header, and the
  host name as the TLS server name), so a second DNS answer between check and connect (DNS
  rebinding) cannot redirect it.
- **No redirects to another origin.** :func:`fetch` follows a redirect only to the same scheme,
  host and port (and pins it again); anything else is a :class:`PolicyViolation`.
- **TLS verified.** https requests verify the certificate against the host name (httpx's default
  context; the policy never turns verification off).
- **Bounded.** :func:`fetch` reads at most ``max_bytes`` of a response body and gives up after a
  total ``deadline_s`` (a server that drips one byte at a time does not hold a worker forever).

``allow_private`` lifts only the address rule: for tests on loopback and single-host setups
(``Settings.outbound_allow_private_hosts``). No FastAPI or Celery here.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f]")
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_URL_LENGTH = 2048


class PolicyViolation(Exception):
    """A URL, address, redirect or response the outbound policy does not allow (the message says
    which rule)."""


# --- addresses ---------------------------------------------------------------------------------


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
    """Why ``address`` may not be connected to, or None when it is globally routable."""
    if not address.is_global or address.is_multicast:
        return f"{address} is not a globally routable address"
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None and (not inner.is_global or inner.is_multicast):
            return f"{address} carries the IPv4 address {inner}, which is not globally routable"
    return None


def _ipv4_number(part: str) -> int | None:
    """One dotted part of an IPv4 literal as a resolver reads it (0x hex, leading-0 octal)."""
    if not part:
        return None
    try:
        if part[:2] in ("0x", "0X"):
            return int(part[2:] or "0", 16)
        if len(part) > 1 and part[0] == "0":
            return int(part[1:], 8)
        return int(part, 10) if part.isdigit() else None
    except ValueError:
        return None


def _ipv4_literal(host: str) -> ipaddress.IPv4Address | None:
    """``host`` as an IPv4 address if it is a literal in any form (WHATWG URL IPv4 parser)."""
    parts = host.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts = parts[:-1]  # a trailing dot
    if len(parts) > 4:
        return None
    numbers = [_ipv4_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    if any(v > 255 for v in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        return None
    total = values[-1]
    for index, value in enumerate(values[:-1]):
        total += value << (8 * (3 - index))
    return ipaddress.IPv4Address(total)


def literal_address(host: str) -> IPAddress | None:
    """The address ``host`` stands for when it is an IP literal (any IPv4 form, or IPv6), else
    None. ``host`` as :func:`urllib.parse.urlsplit` gives it (no brackets)."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return _ipv4_literal(host)


# --- URLs --------------------------------------------------------------------------------------


def url_refusal(
    url: str, *, allow_private: bool, noun: str = "url", require_https: bool = False
) -> str | None:
    """Why ``url`` may not be called (checked without DNS), or None.

    Checks: length, control or whitespace characters (CR/LF would split a request), an absolute
    ``http``/``https`` URL (``https`` only with ``require_https``), a host, a port in 1-65535, no
    credentials, and, unless ``allow_private``, a literal host that is a global address.
    ``noun`` starts each reason (``"webhook url"``).
    """
    if len(url) > MAX_URL_LENGTH:
        return f"{noun} is longer than {MAX_URL_LENGTH} characters"
    found = _UNSAFE_URL_CHARS.search(url)
    if found:
        return f"{noun} contains the control or whitespace character U+{ord(found.group()):04X}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"{noun} is not a valid URL: {exc}"
    schemes = ("https",) if require_https else ("http", "https")
    if parts.scheme not in schemes or not parts.hostname:
        shown = " or ".join(f"{s}://" for s in schemes)
        return f"{noun} {url!r} must be an absolute {shown} URL"
    if port == 0:
        return f"{noun} port 0 is not a valid port"
    if parts.username is not None or parts.password is not None:
        return f"{noun} must not contain credentials"
    address = literal_address(parts.hostname)
    if address is not None and not allow_private:
        reason = address_refusal(address)
        if reason is not None:
            return f"{noun} host {reason}"
    return None


@dataclass(frozen=True)
class PinnedTarget:
    """What to connect to: ``url`` with the checked IP ``address`` as its host, the original
    ``host_header`` and, for https, the TLS ``sni_hostname`` (the name the certificate must
    carry)."""

    url: str
    host_header: str
    sni_hostname: str | None
    address: IPAddress


def resolve(url: str, *, allow_private: bool) -> PinnedTarget | str:
    """The checked, pinned target of ``url`` or, as a string, why it may not be called.

    The host is resolved once (a literal in any form is read without DNS) and every address it
    resolves to must be allowed; the target is the first.
    """
    refusal = url_refusal(url, allow_private=allow_private)
    if refusal is not None:
        return refusal
    parts = urlsplit(url)
    host = parts.hostname or ""
    literal = literal_address(host)
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        try:
            infos = socket.getaddrinfo(host, parts.port, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError) as exc:
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
    sni = host if parts.scheme == "https" and literal is None else None
    return PinnedTarget(pinned, host_header, sni, address)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


# --- requests ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fetched:
    """A response read under the policy: status, headers, the whole (bounded) body, and the
    original (not pinned) URL that answered."""

    status_code: int
    headers: httpx.Headers
    content: bytes
    url: str
    elapsed_s: float = field(default=0.0)


def pinned_request(
    client: httpx.Client,
    target: PinnedTarget,
    method: str,
    *,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
    timeout_s: float = 10.0,
) -> httpx.Request:
    """An httpx request to the pinned address with the original ``Host`` and TLS server name."""
    all_headers = dict(headers or {})
    all_headers["Host"] = target.host_header
    extensions = {"sni_hostname": target.sni_hostname} if target.sni_hostname else None
    return client.build_request(
        method,
        target.url,
        content=content,
        headers=all_headers,
        timeout=timeout_s,
        extensions=extensions,
    )


def fetch(
    method: str,
    url: str,
    *,
    allow_private: bool,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
    timeout_s: float = 10.0,
    deadline_s: float | None = None,
    max_bytes: int = 1 << 20,
    max_redirects: int = 3,
    client: httpx.Client | None = None,
) -> Fetched:
    """One request under the policy; raises :class:`PolicyViolation` or ``httpx.HTTPError``.

    ``timeout_s``: connect/read timeout of each network operation; ``deadline_s``: the whole
    exchange, body included (default ``4 * timeout_s``); ``max_bytes``: the largest body read.
    Redirects are followed (at most ``max_redirects``) only within the same origin; 303, and
    301/302 of a POST, continue as GET without a body.
    """
    deadline = time.monotonic() + (deadline_s if deadline_s is not None else 4.0 * timeout_s)
    own = client is None
    http = client or httpx.Client(follow_redirects=False)
    try:
        current, current_method, current_content = url, method, content
        for _ in range(max_redirects + 1):
            target = resolve(current, allow_private=allow_private)
            if isinstance(target, str):
                raise PolicyViolation(target)
            request = pinned_request(
                http,
                target,
                current_method,
                headers=headers,
                content=current_content,
                timeout_s=timeout_s,
            )
            started = time.monotonic()
            response = http.send(request, stream=True)
            try:
                if response.status_code in _REDIRECT_STATUSES and "location" in response.headers:
                    following = urljoin(current, response.headers["location"])
                    if _origin(following) != _origin(current):
                        raise PolicyViolation(
                            f"{current} redirects to another origin ({following}): not followed"
                        )
                    if response.status_code == 303 or (
                        response.status_code in (301, 302) and current_method == "POST"
                    ):
                        current_method, current_content = "GET", None
                    current = following
                    continue
                body = _read_bounded(response, max_bytes, deadline, current)
                return Fetched(
                    response.status_code,
                    response.headers,
                    body,
                    current,
                    time.monotonic() - started,
                )
            finally:
                response.close()
        raise PolicyViolation(f"{url} redirects more than {max_redirects} times")
    finally:
        if own:
            http.close()


def _read_bounded(response: httpx.Response, max_bytes: int, deadline: float, url: str) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise PolicyViolation(f"{url} answered {declared} bytes, more than the {max_bytes} allowed")
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise PolicyViolation(f"{url} answered more than the {max_bytes} bytes allowed")
        if time.monotonic() > deadline:
            raise PolicyViolation(f"{url} did not finish its answer in time")
        chunks.append(chunk)
    return b"".join(chunks)
