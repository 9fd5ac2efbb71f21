"""Security headers on every response (pure ASGI middleware: streaming bodies pass untouched).

- ``Content-Security-Policy``: scripts only from this origin or inline with this response's
  nonce (``request.state.csp_nonce``, which the page templates put on their ``<script>``);
  no plugins, no framing, forms only to this origin. Inline ``style=`` attributes stay allowed
  (progress bars). Not set on the Swagger UI page (``/v1/docs``), which loads its script from a
  CDN.
- ``X-Frame-Options: DENY`` (no clickjacking, for browsers without ``frame-ancestors``),
  ``X-Content-Type-Options: nosniff`` (an uploaded or served file is never sniffed into HTML or
  script), ``Referrer-Policy: same-origin``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP_EXEMPT_PATHS = frozenset({"/v1/docs"})


def content_security_policy(nonce: str) -> str:
    """The pages' policy for one response with script nonce ``nonce``."""
    return "; ".join(
        (
            "default-src 'self'",
            f"script-src 'self' 'nonce-{nonce}'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        )
    )


class SecurityHeadersMiddleware:
    """Adds the headers above to every HTTP response (a header the route set is kept)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        nonce = secrets.token_urlsafe(16)
        scope.setdefault("state", {})["csp_nonce"] = nonce
        extra: list[tuple[bytes, bytes]] = [
            (b"x-frame-options", b"DENY"),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"same-origin"),
        ]
        if scope.get("path") not in CSP_EXEMPT_PATHS:
            extra.append((b"content-security-policy", content_security_policy(nonce).encode()))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers: Iterable[tuple[bytes, bytes]] = message.get("headers", [])
                present = {name.lower() for name, _ in headers}
                message["headers"] = [
                    *headers,
                    *((n, v) for n, v in extra if n not in present),
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)
