"""Teams, users and API tokens: who may call the platform.

Every function takes an open session first and leaves committing to the caller.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from services.platform.identity.principal import Principal
from services.platform.identity.tokens import (
    DISPLAY_PREFIX_LENGTH,
    generate_token,
    hash_token,
    hashes_equal,
)
from services.platform.rows import get_row
from services.storage.errors import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
)
from services.storage.models import ApiToken, Team, TokenScope, User
from services.storage.types import utc_now
from services.text_policy import check_field

_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
DISPLAY_NAME_CHARS = 200
"""Longest team display name or token name (characters; the columns' width)."""


# --- teams and users ---------------------------------------------------------------------------


def create_team(session: Session, slug: str, display_name: str | None = None) -> Team:
    """A new team. ``slug``: lowercase letters, digits, '-', at most 64 characters, unique;
    ``display_name`` under the text policy (``services.text_policy``), default the slug."""
    if not _SLUG_RE.match(slug):
        raise ConflictError(f"team slug {slug!r} must match {_SLUG_RE.pattern}")
    if display_name:
        display_name = check_field("display_name", display_name, max_length=DISPLAY_NAME_CHARS)
    if session.scalar(select(Team.id).where(Team.slug == slug)) is not None:
        raise ConflictError(f"team slug {slug!r} is taken")
    team = Team(slug=slug, display_name=display_name or slug)
    session.add(team)
    session.flush()
    return team


def get_team(session: Session, team_id: int) -> Team:
    """The team with ``team_id`` or :class:`NotFoundError`."""
    return get_row(session, Team, team_id)


def get_team_by_slug(session: Session, slug: str) -> Team:
    """The team with ``slug`` or :class:`NotFoundError`."""
    team = session.scalar(select(Team).where(Team.slug == slug))
    if team is None:
        raise NotFoundError(f"team {slug!r} not found")
    return team


def lock_team(session: Session, team_id: int) -> Team:
    """The team row, locked until the transaction ends (``SELECT ... FOR UPDATE`` on PostgreSQL).

    Quota checks take this lock first, so two concurrent requests of one team cannot both pass a
    check that only one of them fits under.
    """
    return get_row(session, Team, team_id, lock=True)


def create_user(
    session: Session, team_id: int, email: str, display_name: str | None = None
) -> User:
    """A new user of team ``team_id``. E-mail addresses are unique, compared lowercased."""
    normalized = email.strip().lower()
    if "@" not in normalized:
        raise ConflictError(f"user email {email!r} is not an e-mail address")
    get_row(session, Team, team_id)
    if session.scalar(select(User.id).where(User.email == normalized)) is not None:
        raise ConflictError(f"user email {normalized!r} is taken")
    user = User(team_id=team_id, email=normalized, display_name=display_name or normalized)
    session.add(user)
    session.flush()
    return user


def get_or_create_user(
    session: Session, team_id: int, email: str, display_name: str | None = None
) -> User:
    """The user with ``email`` (must belong to ``team_id``), created when missing."""
    normalized = email.strip().lower()
    user = session.scalar(select(User).where(User.email == normalized))
    if user is None:
        return create_user(session, team_id, normalized, display_name)
    if user.team_id != team_id:
        raise ConflictError(f"user email {normalized!r} belongs to another team")
    return user


def team_robot_email(slug: str) -> str:
    """The e-mail of the user that owns a team's API tokens when no person is named."""
    return f"api-robot@{slug}.teams.unmask.invalid"


# --- API tokens --------------------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedToken:
    """A freshly issued token: ``plaintext`` is shown once and never stored."""

    token: ApiToken
    plaintext: str


def _normalize_scopes(scopes: Iterable[str]) -> list[str]:
    result: set[str] = set()
    for scope in scopes:
        try:
            result.add(TokenScope(scope).value)
        except ValueError:
            allowed = ", ".join(s.value for s in TokenScope)
            raise ConflictError(f"token scope {scope!r} is not one of {allowed}") from None
    if not result:
        raise ConflictError("a token needs at least one scope")
    return sorted(result)


def issue_token(
    session: Session,
    user_id: int,
    *,
    hmac_key: str,
    scopes: Iterable[str] = (TokenScope.READ,),
    name: str = "",
    expires_in_s: float | None = None,
    now: dt.datetime | None = None,
) -> IssuedToken:
    """Create a token for ``user_id``; only its HMAC is stored. ``expires_in_s`` in seconds;
    ``name`` is a label under the text policy (``services.text_policy``)."""
    name = check_field("name", name, max_length=DISPLAY_NAME_CHARS)
    user = get_row(session, User, user_id)
    now = now or utc_now()
    plaintext = generate_token()
    token = ApiToken(
        user_id=user.id,
        name=name,
        prefix=plaintext[:DISPLAY_PREFIX_LENGTH],
        token_hash=hash_token(plaintext, hmac_key),
        scopes=_normalize_scopes(scopes),
        expires_at=None if expires_in_s is None else now + dt.timedelta(seconds=expires_in_s),
        created_at=now,
    )
    session.add(token)
    session.flush()
    return IssuedToken(token=token, plaintext=plaintext)


def issue_team_token(
    session: Session,
    team_slug: str,
    *,
    hmac_key: str,
    scopes: Iterable[str],
    name: str = "",
    expires_in_s: float | None = None,
    email: str | None = None,
) -> IssuedToken:
    """Issue a token for team ``team_slug`` (owned by ``email``, default the team's robot user)."""
    team = get_team_by_slug(session, team_slug)
    user = get_or_create_user(session, team.id, email or team_robot_email(team.slug))
    return issue_token(
        session, user.id, hmac_key=hmac_key, scopes=scopes, name=name, expires_in_s=expires_in_s
    )


def verify_token(
    session: Session,
    plaintext: str,
    *,
    hmac_key: str,
    required_scope: str | None = None,
    now: dt.datetime | None = None,
    touch_interval_s: float = 60.0,
) -> ApiToken:
    """The token row for ``plaintext`` if it is valid, else :class:`AuthenticationError`.

    Valid means: known hash, not revoked, not expired, user active. ``required_scope`` missing
    from the token's scopes (``admin`` grants all) raises :class:`PermissionDeniedError`.
    ``last_used_at`` is updated when older than ``touch_interval_s`` seconds, so a busy client
    does not turn every read into a write.
    """
    now = now or utc_now()
    presented_hash = hash_token(plaintext, hmac_key)
    # User and team in the same query: every caller reads them next (is_active, the principal).
    token = session.scalar(
        select(ApiToken)
        .options(joinedload(ApiToken.user).joinedload(User.team))
        .where(ApiToken.token_hash == presented_hash)
    )
    # The lookup already matched on the hash; the constant-time compare guards against a
    # collation or case-folding database returning a near match.
    if token is None or not hashes_equal(token.token_hash, presented_hash):
        raise AuthenticationError("unknown API token")
    if token.revoked_at is not None:
        raise AuthenticationError(f"API token {token.prefix}... was revoked")
    if token.expires_at is not None and token.expires_at <= now:
        raise AuthenticationError(f"API token {token.prefix}... expired at {token.expires_at}")
    if not token.user.is_active:
        raise AuthenticationError(f"the user of API token {token.prefix}... is deactivated")
    if required_scope is not None:
        scope = TokenScope(required_scope).value
        if scope not in token.scopes and TokenScope.ADMIN.value not in token.scopes:
            raise PermissionDeniedError(
                f"API token {token.prefix}... lacks scope {scope!r} (has {token.scopes})"
            )
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() >= (
        touch_interval_s
    ):
        token.last_used_at = now
        session.flush()
    return token


def authenticate(
    session: Session, plaintext: str, *, hmac_key: str, required_scope: str | None = None
) -> Principal:
    """The caller presenting ``plaintext``: :func:`verify_token`, then its :class:`Principal`."""
    token = verify_token(session, plaintext, hmac_key=hmac_key, required_scope=required_scope)
    return Principal.of_token(token)


def get_token(session: Session, token_id: int) -> ApiToken:
    """The API token row with ``token_id`` or :class:`NotFoundError`."""
    return get_row(session, ApiToken, token_id, noun="token")


def revoke_token(
    session: Session,
    token_id: int,
    *,
    by_token_id: int | None = None,
    now: dt.datetime | None = None,
) -> ApiToken:
    """Revoke a token (idempotent: a second call keeps the first revocation time).

    ``by_token_id``: the token making a request through the API, which may not revoke itself
    nor the last valid admin token (either would lock the administrators out of the API):
    :class:`ConflictError`. The operator's CLI (None) may revoke any."""
    now = now or utc_now()
    token = get_row(session, ApiToken, token_id, noun="token", lock=True)
    if token.revoked_at is None and by_token_id is not None:
        if token.id == by_token_id:
            raise ConflictError(
                f"token {token_id} is the one making this request; revoke it with another "
                "admin token"
            )
        if TokenScope.ADMIN.value in token.scopes:
            admins = session.scalars(
                select(ApiToken)
                .where(ApiToken.revoked_at.is_(None), ApiToken.id != token.id)
                .with_for_update()
            )
            if not any(
                TokenScope.ADMIN.value in t.scopes and (t.expires_at is None or t.expires_at > now)
                for t in admins
            ):
                raise ConflictError(
                    f"token {token_id} is the last valid admin token; issue another first"
                )
    if token.revoked_at is None:
        token.revoked_at = now
        session.flush()
    return token
