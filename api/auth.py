"""Bearer-token authentication and per-route scopes.

``Authorization: Bearer unm_...`` is checked by ``services.storage.repository.verify_token``
(HMAC-SHA256 lookup, revocation, expiry, active user, scope; ``last_used_at`` updated at most once
a minute). Missing, unknown, expired or revoked tokens get 401; a valid token without the route's
scope gets 403. Ownership: objects of another team that are private answer 404 (their existence is
not disclosed); public ones can be read but not changed (403).
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
from services.storage import repository as repo
from services.storage.models import TokenScope, Visibility

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


@dataclass(frozen=True)
class Principal:
    """Who is calling: the verified token's user, team and scopes."""

    token_id: int
    token_prefix: str
    user_id: int
    team_id: int
    team_slug: str
    scopes: tuple[str, ...]

    @property
    def is_admin(self) -> bool:
        """Whether the token carries the ``admin`` scope (sees every team's objects)."""
        return TokenScope.ADMIN.value in self.scopes

    def can_see(self, team_id: int, visibility: str) -> bool:
        """Whether an object of ``team_id`` with ``visibility`` may be read by this caller."""
        return self.is_admin or team_id == self.team_id or visibility == Visibility.PUBLIC.value

    def owns(self, team_id: int) -> bool:
        """Whether the caller may change an object of ``team_id``."""
        return self.is_admin or team_id == self.team_id


def verify_in_session(session: Session, hmac_key: str, token: str, scope: str | None) -> Principal:
    """Verify ``token`` for ``scope`` with ``session`` (see ``repository.verify_token``)."""
    row = repo.verify_token(session, token, hmac_key=hmac_key, required_scope=scope)
    user = row.user
    return Principal(
        token_id=row.id,
        token_prefix=row.prefix,
        user_id=user.id,
        team_id=user.team_id,
        team_slug=user.team.slug,
        scopes=tuple(row.scopes),
    )


def authenticate(context: ApiContext, token: str, scope: str | None) -> Principal:
    """Verify ``token`` for ``scope`` in its own short transaction (commits ``last_used_at``)."""
    with context.database.session_scope() as session:
        return verify_in_session(session, context.settings.token_hmac_key, token, scope)


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
                verify_in_session(
                    session, self.context.settings.token_hmac_key, self.token, self.scope
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
