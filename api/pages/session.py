"""Who is looking at a page: anonymous, or a team signed in with an API token.

The login form (``POST /login``) takes an API token with the ``read`` scope, verifies it and sets
the HttpOnly cookie ``unmask_session`` = ``<token id>.<expiry, Unix s>.<HMAC-SHA256 hex>``, signed
with ``Settings.token_hmac_key``. The cookie does not contain the token itself; every request
re-checks the token row, so revoking or expiring the token ends the page session at once.
Public pages need no login; a team's private submissions and jobs are shown only to that team
(and to ``admin`` tokens).

Login CSRF (another site signing a visitor in as the attacker's team): ``GET /login`` sets a
random secret in the HttpOnly, SameSite=Strict cookie ``unmask_login_csrf`` and puts its HMAC in
the form; ``POST /login`` is refused (403) unless the form's value matches the cookie. Another
site can neither read the form nor send (or set) the cookie.

Logout CSRF (another site signing a visitor out: the response's cookie deletion works even on a
request that carried no cookie): the sign-out form carries the HMAC of the visitor's own session
cookie, and ``POST /logout`` clears nothing (403) unless the form's value matches the cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
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
CSRF_COOKIE_NAME = "unmask_login_csrf"
CSRF_MAX_AGE_S = 2 * 3600
_CONTEXT = b"unmask-page-session-v1:"
_CSRF_CONTEXT = b"unmask-login-csrf-v1:"
_LOGOUT_CONTEXT = b"unmask-logout-csrf-v1:"
_CSRF_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")


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


def login_csrf_secret(request: Request) -> str:
    """The browser's login-form secret (its cookie when well formed, else a new one)."""
    current = request.cookies.get(CSRF_COOKIE_NAME, "")
    return current if _CSRF_SECRET_RE.match(current) else secrets.token_urlsafe(32)


def login_csrf_token(settings: Settings, secret: str) -> str:
    """The value the login form carries for ``secret`` (HMAC-SHA256 hex)."""
    return hmac.new(
        settings.token_hmac_key.encode(), _CSRF_CONTEXT + secret.encode(), hashlib.sha256
    ).hexdigest()


def login_csrf_ok(request: Request, settings: Settings, form_token: str) -> bool:
    """Whether a login POST carries the token of its own cookie's secret."""
    secret = request.cookies.get(CSRF_COOKIE_NAME, "")
    if not _CSRF_SECRET_RE.match(secret) or not form_token:
        return False
    return hmac.compare_digest(login_csrf_token(settings, secret), form_token)


def set_login_csrf_cookie(response: Response, request: Request, secret: str) -> None:
    """Attach the login form's secret (HttpOnly, SameSite=Strict, only sent to /login)."""
    response.set_cookie(
        CSRF_COOKIE_NAME,
        secret,
        max_age=CSRF_MAX_AGE_S,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/login",
    )


def logout_csrf_token(request: Request, settings: Settings) -> str | None:
    """The value the sign-out form carries for this browser's session cookie; None without one."""
    session = request.cookies.get(COOKIE_NAME, "")
    if not session:
        return None
    return hmac.new(
        settings.token_hmac_key.encode(), _LOGOUT_CONTEXT + session.encode(), hashlib.sha256
    ).hexdigest()


def logout_csrf_ok(request: Request, settings: Settings, form_token: str) -> bool:
    """Whether a sign-out POST carries the token of its own session cookie."""
    expected = logout_csrf_token(request, settings)
    return expected is not None and bool(form_token) and hmac.compare_digest(expected, form_token)


def clear_session_cookie(response: Response) -> None:
    """Remove the login cookie."""
    response.delete_cookie(COOKIE_NAME, path="/")


__all__ = [
    "COOKIE_NAME",
    "CSRF_COOKIE_NAME",
    "AuthenticationError",
    "PermissionDeniedError",
    "clear_session_cookie",
    "login",
    "login_csrf_ok",
    "login_csrf_secret",
    "login_csrf_token",
    "logout_csrf_ok",
    "logout_csrf_token",
    "session_cookie_value",
    "set_login_csrf_cookie",
    "set_session_cookie",
    "viewer_of",
]
