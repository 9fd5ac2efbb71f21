"""Tokens without a stored secret: a GitHub Actions run's OpenID Connect ID token exchanged for a
short-lived Unmask token (``POST /v1/tokens/oidc``; docs/ci.md, "Without a stored token").

A workflow with ``permissions: id-token: write`` gets two variables from the runner,
``ACTIONS_ID_TOKEN_REQUEST_URL`` and ``ACTIONS_ID_TOKEN_REQUEST_TOKEN``; a ``GET`` of that URL
(plus ``&audience=...``) with the request token answers ``{"value": "<JWT>"}``. The audience is
``UNMASK_OIDC_AUDIENCE`` or else ``UNMASK_URL`` without a trailing slash (the server's
``UNMASK_PUBLIC_URL``). The exchanged token lives minutes (``UNMASK_OIDC_TOKEN_TTL_S`` on the
server): :class:`GitHubOidcTokenSource` fetches a fresh ID token and exchanges it again a minute
before it expires, so a wait of hours keeps working. Only ``httpx`` (part of the
``unmask-client`` distribution; the ``unmask`` CLI imports it from here).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Mapping
from urllib.parse import urlencode

import httpx

REQUEST_URL_ENV = "ACTIONS_ID_TOKEN_REQUEST_URL"
REQUEST_TOKEN_ENV = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
AUDIENCE_ENV = "UNMASK_OIDC_AUDIENCE"
EXCHANGE_PATH = "/v1/tokens/oidc"
REFRESH_MARGIN_S = 60.0
_UTC = dt.timezone.utc  # noqa: UP017 (dt.UTC is Python 3.11+; the package supports 3.10)


class OidcExchangeError(RuntimeError):
    """The ID token could not be obtained or was refused; ``status`` is the HTTP status, if
    any."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def github_oidc_available(environ: Mapping[str, str]) -> bool:
    """Whether the environment is a GitHub Actions job allowed to mint ID tokens."""
    return bool(environ.get(REQUEST_URL_ENV) and environ.get(REQUEST_TOKEN_ENV))


class GitHubOidcTokenSource:
    """Unmask tokens exchanged for the running workflow's ID tokens, renewed before expiry.

    Thread-safe; ``transport`` (tests) serves both the runner's token URL and the API.
    """

    def __init__(
        self,
        api_url: str,
        environ: Mapping[str, str],
        *,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.request_url = environ[REQUEST_URL_ENV]
        self.request_token = environ[REQUEST_TOKEN_ENV]
        self.audience = environ.get(AUDIENCE_ENV) or self.api_url
        self._http = httpx.Client(timeout=timeout_s, transport=transport)
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires_at = dt.datetime.min.replace(tzinfo=_UTC)
        self.exchanges = 0

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def token(self, now: dt.datetime | None = None) -> str:
        """A valid Unmask token (exchanged again when it expires within a minute)."""
        now = now or dt.datetime.now(_UTC)
        with self._lock:
            if self._token is None or now >= self._expires_at - dt.timedelta(
                seconds=REFRESH_MARGIN_S
            ):
                self._token, self._expires_at = self._exchange(self._id_token())
            return self._token

    def authorize(self, request: httpx.Request) -> None:
        """An httpx request hook: the current token on every API request (a failed renewal is an
        ``httpx.RequestError``, as a network failure would be)."""
        try:
            request.headers["Authorization"] = f"Bearer {self.token()}"
        except OidcExchangeError as exc:
            raise httpx.RequestError(f"OpenID Connect: {exc}", request=request) from None

    def _id_token(self) -> str:
        separator = "&" if "?" in self.request_url else "?"
        url = self.request_url + separator + urlencode({"audience": self.audience})
        try:
            response = self._http.get(
                url, headers={"Authorization": f"bearer {self.request_token}"}
            )
        except httpx.HTTPError as exc:
            raise OidcExchangeError(f"GitHub's ID-token service: {exc}") from None
        if response.status_code != 200:
            raise OidcExchangeError(
                f"GitHub's ID-token service answered {response.status_code} (does the job have "
                "`permissions: id-token: write`?)",
                status=response.status_code,
            )
        value = response.json().get("value") if response.content else None
        if not isinstance(value, str) or not value:
            raise OidcExchangeError("GitHub's ID-token service answered no token")
        return value

    def _exchange(self, id_token: str) -> tuple[str, dt.datetime]:
        try:
            response = self._http.post(self.api_url + EXCHANGE_PATH, json={"token": id_token})
        except httpx.HTTPError as exc:
            raise OidcExchangeError(f"POST {EXCHANGE_PATH}: {exc}") from None
        body = response.json() if response.content else {}
        if response.status_code != 201:
            detail = body.get("detail") if isinstance(body, dict) else None
            raise OidcExchangeError(
                f"POST {EXCHANGE_PATH} answered {response.status_code}: {detail or 'no detail'}",
                status=response.status_code,
            )
        self.exchanges += 1
        expires_at = dt.datetime.fromisoformat(str(body["expires_at"]).replace("Z", "+00:00"))
        return str(body["token"]), expires_at
