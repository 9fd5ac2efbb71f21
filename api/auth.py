"""Bearer-token authentication and per-route scopes.

``Authorization: Bearer unm_...`` is checked by ``services.platform.identity.verify_token``
(HMAC-SHA256 lookup, revocation, expiry, active user, scope; ``last_used_at`` updated at most once
a minute). Missing, unknown, expired or revoked tokens get 401; a valid token without the route's
scope gets 403. The caller is a :class:`~services.platform.identity.Principal`; what it may see or
change is decided by ``services.platform.access`` (another team's private objects: 404, its
public ones read-only: 403).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from api.context import ApiContext, get_context
from api.problems import ApiProblem
from services.platform import identity
from services.platform.identity import Principal
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


def authenticate(context: ApiContext, token: str, scope: str | None) -> Principal:
    """Verify ``token`` for ``scope`` in its own short transaction (commits ``last_used_at``)."""
    with context.database.session_scope() as session:
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
        credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),
        context: ApiContext = Depends(get_context),
    ) -> Principal:
        token = _bearer_token(credentials)
        return authenticate(context, token, scope.value if scope else None)

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

    @contextmanager
    def open(self) -> Iterator[tuple[Principal, Session]]:
        """(caller, session) in one transaction; 401/403 problems when the token fails."""
        with self.context.database.session_scope() as session:
            yield (
                identity.authenticate(
                    session,
                    self.token,
                    hmac_key=self.context.settings.token_hmac_key,
                    required_scope=self.scope,
                ),
                session,
            )


def reader_with_scope(scope: TokenScope | None) -> Callable[..., Awaitable[Reader]]:
    """A dependency for read-only routes: the bearer token (401 when missing), checked later by
    ``Reader.open()`` inside the route's transaction."""

    async def dependency(  # async: no I/O here, so no thread-pool hop
        credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),
        context: ApiContext = Depends(get_context),
    ) -> Reader:
        return Reader(context, _bearer_token(credentials), scope.value if scope else None)

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
    "Principal",
    "Reader",
    "authenticate",
    "reader_any",
    "reader_read",
    "reader_with_scope",
    "require_admin",
    "require_any",
    "require_read",
    "require_scope",
    "require_submit",
]
