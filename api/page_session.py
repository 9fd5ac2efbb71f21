"""Who is looking at a page: anonymous, or a team signed in with an API token.

The login form (``POST /login``) takes an API token with the ``read`` scope, verifies it and sets
the HttpOnly cookie ``unmask_session`` = ``<token id>.<expiry, Unix s>.<HMAC-SHA256 hex>``, signed
with ``Settings.token_hmac_key``. The cookie does not contain the token itself; every request
re-checks the token row, so revoking or expiring the token ends the page session at once.
Public pages need no login; a team's private submissions and jobs are shown only to that team
(and to ``admin`` tokens).
"""

from __future__ import annotations

import hashlib
import hmac
import time

from fastapi import Request, Response
from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from services.platform import identity
from services.platform.identity import Principal
from services.settings import Settings
from services.storage.errors import AuthenticationError, PermissionDeniedError
from services.storage.models import ApiToken, TokenScope, User
from services.storage.types import utc_now

COOKIE_NAME = "unmask_session"
_CONTEXT = b"unmask-page-session-v1:"


def _signature(key: str, token_id: int, expires: int) -> str:
    message = _CONTEXT + f"{token_id}.{expires}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def session_cookie_value(settings: Settings, token_id: int, *, now: float | None = None) -> str:
    """The cookie for a verified token, valid ``page_session_max_age_s`` seconds."""
    expires = int((time.time() if now is None else now) + settings.page_session_max_age_s)
    return f"{token_id}.{expires}.{_signature(settings.token_hmac_key, token_id, expires)}"


def login(session: Session, settings: Settings, token: str) -> Principal:
    """Verify ``token`` for the pages (scope ``read``); AuthenticationError/PermissionDenied."""
    return identity.authenticate(
        session, token.strip(), hmac_key=settings.token_hmac_key, required_scope="read"
    )


def viewer_of(request: Request, session: Session, settings: Settings) -> Principal | None:
    """The signed-in team of this request, or None (anonymous, bad/expired cookie, dead token)."""
    raw = request.cookies.get(COOKIE_NAME)
    if not raw:
        return None
    try:
        token_text, expires_text, signature = raw.split(".")
        token_id, expires = int(token_text), int(expires_text)
    except ValueError:
        return None
    expected = _signature(settings.token_hmac_key, token_id, expires)
    if not hmac.compare_digest(expected, signature) or expires < time.time():
        return None
    row = session.scalar(
        select(ApiToken)
        .options(joinedload(ApiToken.user).joinedload(User.team))
        .where(ApiToken.id == token_id)
    )
    now = utc_now()
    if (
        row is None
        or row.revoked_at is not None
        or (row.expires_at is not None and row.expires_at <= now)
        or not row.user.is_active
        or not ({TokenScope.READ.value, TokenScope.ADMIN.value} & set(row.scopes))
    ):
        return None
    return Principal.of_token(row)


def set_session_cookie(
    response: Response, request: Request, settings: Settings, token_id: int
) -> None:
    """Attach the login cookie (HttpOnly, SameSite=Lax, Secure over https)."""
    response.set_cookie(
        COOKIE_NAME,
        session_cookie_value(settings, token_id),
        max_age=settings.page_session_max_age_s,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/",
    )


def clear_session_cookie(response: Response) -> None:
    """Remove the login cookie."""
    response.delete_cookie(COOKIE_NAME, path="/")


__all__ = [
    "COOKIE_NAME",
    "AuthenticationError",
    "PermissionDeniedError",
    "clear_session_cookie",
    "login",
    "session_cookie_value",
    "set_session_cookie",
    "viewer_of",
]
