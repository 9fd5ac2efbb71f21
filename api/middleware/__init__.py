"""What every request passes through before (and after) a route: pure ASGI middleware, plus the
uvicorn protocol that times out half-sent request headers.

From the outside in (:func:`install_middleware` adds them in this order's reverse):

- ``security_headers``: CSP with a per-response script nonce, framing, sniffing, referrer;
- host filtering (Starlette's ``TrustedHostMiddleware``, when ``UNMASK_TRUSTED_HOSTS`` is set);
- ``http_semantics``: ``HEAD`` and ``OPTIONS``, complete ``Allow`` headers, redirects without the
  request's ``Host``;
- ``body_limit``: 413 past ``UNMASK_MAX_JSON_BODY_BYTES`` (the streamed archive uploads excepted);
- ``request_body``: 408 on a stalled body or one past its deadline, 422 on JSON values storage
  cannot hold.

``header_timeout`` is not middleware but uvicorn's HTTP/1.1 protocol with a deadline on request
headers, one of the server options every API server runs with (``api.server``).
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.middleware.trustedhost import TrustedHostMiddleware

from api.middleware.body_limit import BodyLimitMiddleware
from api.middleware.http_semantics import HttpSemanticsMiddleware
from api.middleware.request_body import RequestBodyMiddleware
from api.middleware.security_headers import SecurityHeadersMiddleware
from services.settings import Settings


def install_middleware(app: FastAPI, settings: Settings) -> None:
    """Wraps ``app`` in the middleware above (the last one added is the outermost)."""
    # Inner to the body limit: bodies are read (under the read timeout and the body deadline)
    # only within it.
    app.add_middleware(
        RequestBodyMiddleware,
        read_timeout_s=settings.upload_read_timeout_s,
        body_timeout_s=settings.request_body_timeout_s,
    )
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_json_body_bytes)
    # HEAD and OPTIONS, complete Allow headers, redirects without the request's Host; then only
    # the configured host names are answered at all.
    app.add_middleware(HttpSemanticsMiddleware, fastapi_app=app, public_url=settings.public_url)
    if settings.trusted_hosts != ["*"]:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.trusted_hosts)
    app.add_middleware(SecurityHeadersMiddleware)


__all__ = ["install_middleware"]
