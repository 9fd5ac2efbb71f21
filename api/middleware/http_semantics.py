"""HTTP method semantics the routes do not spell out, and no echo of the request's ``Host``.

- ``HEAD`` on every ``GET`` route answers as ``GET`` without the body (load balancers and uptime
  checks probe ``/v1/health/live`` with ``HEAD``).
- ``OPTIONS`` on any route answers 204 with ``Allow`` listing every method of that path.
- A 405 lists every method of the path in ``Allow`` (FastAPI lists the first route's only).
- A redirect the framework builds from the request (the trailing-slash redirect) never carries
  the request's ``Host``: its ``Location`` becomes the configured public URL plus the path, or the
  path alone when no public URL is configured (``UNMASK_PUBLIC_URL``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(app: ASGIApp, scope: Scope) -> list[str]:
    """Every method some route of ``app`` answers on ``scope``'s path (with HEAD and OPTIONS).

    Each candidate method is matched against the top-level routes (included routers match
    their own routes), so the answer is what the router would do with that method.
    """
    router = getattr(app, "router", None)
    routes = list(getattr(router, "routes", []))
    methods = {
        method
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
        if any(route.matches({**scope, "method": method})[0] == Match.FULL for route in routes)
    }
    if not methods:
        return []
    if "GET" in methods:
        methods.add("HEAD")
    methods.add("OPTIONS")
    return [m for m in METHOD_ORDER if m in methods]


def relative_location(location: str, public_url: str) -> str:
    """``location`` without the scheme and host it was built with: ``public_url`` + its path (and
    query), or the path alone."""
    parts = urlsplit(location)
    if not parts.scheme and not parts.netloc:
        return location
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return public_url.rstrip("/") + path if public_url else path


class HttpSemanticsMiddleware:
    """HEAD, OPTIONS, complete ``Allow`` headers and host-free redirects (module docstring)."""

    def __init__(self, app: ASGIApp, fastapi_app: ASGIApp, public_url: str = "") -> None:
        self.app = app
        self.fastapi_app = fastapi_app  # the application whose routes are matched
        self.public_url = public_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if method == "OPTIONS":
            allowed = allowed_methods(self.fastapi_app, scope)
            if allowed:
                response = Response(status_code=204, headers={"Allow": ", ".join(allowed)})
                await response(scope, receive, send)
                return
        head = method == "HEAD" and "GET" in allowed_methods(self.fastapi_app, scope)
        inner_scope = {**scope, "method": "GET"} if head else scope

        async def send_fixed(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                status = message["status"]
                if status == 405:
                    allowed = allowed_methods(self.fastapi_app, scope)
                    if allowed:
                        headers["Allow"] = ", ".join(allowed)
                if 300 <= status < 400 and "location" in headers:
                    location = headers["location"]
                    host = _request_host(scope)
                    if host and urlsplit(location).netloc == host:
                        headers["Location"] = relative_location(location, self.public_url)
            elif message["type"] == "http.response.body" and head:
                message = {**message, "body": b""}
            await send(message)

        await self.app(inner_scope, receive, send_fixed)


def _request_host(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"host":
            return str(value.decode("latin-1"))
    return ""
