"""Bearer-token authentication and per-route scopes.

``Authorization: Bearer unm_...`` is checked by ``services.platform.identity.verify_token``
(HMAC-SHA256 lookup, revocation, expiry, active user, scope; ``last_used_at`` updated at most once
a minute). Missing, unknown, expired or revoked tokens get 401; a valid token without the route's
scope gets 403. The caller is a :class:`~services.platform.identity.Principal`; what it may see or
change is decided by ``services.platform.access`` (another team's private objects: 404, its
public ones read-only: 403).

Failed authentications count per client address (``api/auth_limits.py``): past
``UNMASK_AUTH_MAX_FAILURES`` within ``UNMASK_AUTH_FAILURE_WINDOW_S`` the address gets 429 with
``Retry-After`` before its token is even looked at.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from api.auth_limits import client_address
from api.context import ApiContext, get_context
from api.problems import ApiProblem
from services.platform import identity
from services.platform.identity import Principal
from services.storage.errors import AuthenticationError
from services.storage.models import TokenScope

BEARER_SCHEME_NAME = "bearerAuth"

bearer_scheme = HTTPBearer(
    scheme_name=BEARER_SCHEME_NAME,
    bearerFormat="unm_<43 URL-safe characters>",
    description=(
        "API token issued by an administrator (`unmask admin create-token` or "
        "`POST /v1/admin/tokens`). Scopes: `read` (GET routes), `submit` (create submissions "
        "and jobs, cancel, re-run), `admin` (everything, plus the /v1/admin routes). "
        "Each route names its scope in `x-required-scope`."
    ),
    auto_error=False,
)

_UNAUTHORIZED_HEADERS = {"WWW-Authenticate": 'Bearer realm="unmask"'}


def check_auth_rate(context: ApiContext, client: str) -> None:
    """429 when ``client`` made too many failed authentications lately."""
    retry_after = context.auth_limiter.retry_after_s(client)
    if retry_after is not None:
        raise ApiProblem(
            429,
            f"too many failed authentications from this address; retry in {retry_after} s",
            slug="too-many-failed-authentications",
            title="Too many failed authentications",
            headers={"Retry-After": str(retry_after)},
        )


@contextmanager
def counting_failures(context: ApiContext, client: str) -> Iterator[None]:
    """Refuse a blocked ``client`` (429), and count an authentication that fails inside."""
    check_auth_rate(context, client)
    try:
        yield
    except AuthenticationError:
        context.auth_limiter.record_failure(client)
        raise


def authenticate(
    context: ApiContext, token: str, scope: str | None, *, client: str = "unknown"
) -> Principal:
    """Verify ``token`` for ``scope`` in its own short transaction (commits ``last_used_at``)."""
    with counting_failures(context, client), context.database.session_scope() as session:
        return identity.authenticate(
            session, token, hmac_key=context.settings.token_hmac_key, required_scope=scope
        )


def _bearer_token(credentials: HTTPAuthorizationCredentials | None) -> str:
    if credentials is None or not credentials.credentials:
        raise ApiProblem(
            401,
            "missing bearer token: send `Authorization: Bearer <API token>`",
            headers=_UNAUTHORIZED_HEADERS,
        )
    return credentials.credentials


def require_scope(scope: TokenScope | None) -> Callable[..., Principal]:
    """A dependency that authenticates the caller and checks ``scope`` (None: any scope).

    For routes that write: the token is checked in its own short transaction, and the route
    opens the transactions it needs.
    """

    def dependency(
        request: Request,
        credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),
        context: ApiContext = Depends(get_context),
    ) -> Principal:
        token = _bearer_token(credentials)
        return authenticate(
            context, token, scope.value if scope else None, client=client_address(request)
        )

    dependency.__name__ = f"require_{scope.value if scope else 'any'}_scope"
    return dependency


@dataclass(frozen=True)
class Reader:
    """A bearer token not verified yet, for read-only routes: ``open()`` verifies it and hands on
    the same session.

    One session (one pooled connection, one transaction) per request instead of two saves the
    database round trips of a second checkout. The route runs its whole body inside ``open()``;
    a yield dependency would release the connection only in a teardown that itself waits for a
    worker thread, which starves the pool under load.
    """

    context: ApiContext
    token: str
    scope: str | None
    client: str = "unknown"

    @contextmanager
    def open(self) -> Iterator[tuple[Principal, Session]]:
        """(caller, session) in one transaction; 401/403 problems when the token fails, 429
        when this client failed too often lately."""
        with self.context.database.session_scope() as session:
            with counting_failures(self.context, self.client):
                principal = identity.authenticate(
                    session,
                    self.token,
                    hmac_key=self.context.settings.token_hmac_key,
                    required_scope=self.scope,
                )
            yield principal, session


def reader_with_scope(scope: TokenScope | None) -> Callable[..., Awaitable[Reader]]:
    """A dependency for read-only routes: the bearer token (401 when missing), checked later by
    ``Reader.open()`` inside the route's transaction."""

    async def dependency(  # async: no I/O here, so no thread-pool hop
        request: Request,
        credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),
        context: ApiContext = Depends(get_context),
    ) -> Reader:
        return Reader(
            context,
            _bearer_token(credentials),
            scope.value if scope else None,
            client_address(request),
        )

    dependency.__name__ = f"read_with_{scope.value if scope else 'any'}_scope"
    return dependency


require_any = require_scope(None)
require_read = require_scope(TokenScope.READ)
require_submit = require_scope(TokenScope.SUBMIT)
require_admin = require_scope(TokenScope.ADMIN)
reader_any = reader_with_scope(None)
reader_read = reader_with_scope(TokenScope.READ)

__all__ = [
    "BEARER_SCHEME_NAME",
    "Reader",
    "authenticate",
    "check_auth_rate",
    "counting_failures",
    "reader_any",
    "reader_read",
    "reader_with_scope",
    "require_admin",
    "require_any",
    "require_read",
    "require_scope",
    "require_submit",
]
