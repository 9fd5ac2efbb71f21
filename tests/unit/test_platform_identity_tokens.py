"""API tokens: HMAC hashing, issue once, verify (expiry, revocation, scopes, last_used_at)."""

from __future__ import annotations

import datetime as dt

import pytest

from services.platform import identity
from services.platform.identity.tokens import TOKEN_PREFIX, generate_token, hash_token
from services.storage.db import Database
from services.storage.errors import AuthenticationError, ConflictError, PermissionDeniedError
from services.storage.models import ApiToken

KEY = "unit-test-hmac-key"


@pytest.fixture()
def user_id(database: Database) -> int:
    with database.session_scope() as session:
        team = identity.create_team(session, "team-a")
        return identity.create_user(session, team.id, "Ann@Example.org").id


def test_hash_is_keyed_hmac_sha256() -> None:
    token = generate_token()
    assert token.startswith(TOKEN_PREFIX)
    digest = hash_token(token, KEY)
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert hash_token(token, KEY) == digest
    assert hash_token(token, KEY + "x") != digest
    assert hash_token(token + "x", KEY) != digest
    with pytest.raises(ValueError, match="empty"):
        hash_token(token, "")


def test_generated_tokens_differ() -> None:
    assert len({generate_token() for _ in range(100)}) == 100


def test_plaintext_is_never_stored(database: Database, user_id: int) -> None:
    with database.session_scope() as session:
        issued = identity.issue_token(session, user_id, hmac_key=KEY, scopes=["submit", "read"])
    with database.engine.connect() as conn:
        dump = "\n".join(repr(row) for row in conn.exec_driver_sql("SELECT * FROM api_tokens"))
    assert issued.plaintext not in dump
    assert hash_token(issued.plaintext, KEY) in dump
    assert issued.token.prefix == issued.plaintext[: len(issued.token.prefix)]


def test_verify_accepts_valid_and_updates_last_used(database: Database, user_id: int) -> None:
    with database.session_scope() as session:
        issued = identity.issue_token(session, user_id, hmac_key=KEY, scopes=["read"])
    now = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    with database.session_scope() as session:
        token = identity.verify_token(
            session, issued.plaintext, hmac_key=KEY, required_scope="read", now=now
        )
        assert token.id == issued.token.id
    with database.session_scope() as session:
        stored = session.get(ApiToken, issued.token.id)
        assert stored is not None and stored.last_used_at == now
        # Within the touch interval the row is not rewritten; after it, it is.
        identity.verify_token(
            session, issued.plaintext, hmac_key=KEY, now=now + dt.timedelta(seconds=5)
        )
        assert stored.last_used_at == now
        later = now + dt.timedelta(minutes=5)
        identity.verify_token(session, issued.plaintext, hmac_key=KEY, now=later)
        assert stored.last_used_at == later


def test_verify_rejects_unknown_wrong_key_expired_revoked(database: Database, user_id: int) -> None:
    now = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    with database.session_scope() as session:
        short = identity.issue_token(session, user_id, hmac_key=KEY, expires_in_s=60, now=now)
        revoked = identity.issue_token(session, user_id, hmac_key=KEY)
        identity.revoke_token(session, revoked.token.id)
    with database.session_scope() as session:
        with pytest.raises(AuthenticationError, match="unknown"):
            identity.verify_token(session, generate_token(), hmac_key=KEY)
        with pytest.raises(AuthenticationError, match="unknown"):
            identity.verify_token(session, short.plaintext, hmac_key="another-key", now=now)
        identity.verify_token(
            session, short.plaintext, hmac_key=KEY, now=now + dt.timedelta(seconds=59)
        )
        with pytest.raises(AuthenticationError, match="expired"):
            identity.verify_token(
                session, short.plaintext, hmac_key=KEY, now=now + dt.timedelta(seconds=60)
            )
        with pytest.raises(AuthenticationError, match="revoked"):
            identity.verify_token(session, revoked.plaintext, hmac_key=KEY)


def test_scopes(database: Database, user_id: int) -> None:
    with database.session_scope() as session:
        reader = identity.issue_token(session, user_id, hmac_key=KEY, scopes=["read"])
        admin = identity.issue_token(session, user_id, hmac_key=KEY, scopes=["admin"])
        with pytest.raises(ConflictError, match="scope"):
            identity.issue_token(session, user_id, hmac_key=KEY, scopes=["write"])
        with pytest.raises(ConflictError, match="at least one"):
            identity.issue_token(session, user_id, hmac_key=KEY, scopes=[])
    with database.session_scope() as session:
        with pytest.raises(PermissionDeniedError, match="submit"):
            identity.verify_token(session, reader.plaintext, hmac_key=KEY, required_scope="submit")
        for scope in ("submit", "read", "admin"):
            identity.verify_token(session, admin.plaintext, hmac_key=KEY, required_scope=scope)


def test_deactivated_user_token_is_rejected(database: Database, user_id: int) -> None:
    with database.session_scope() as session:
        issued = identity.issue_token(session, user_id, hmac_key=KEY)
        issued.token.user.is_active = False
    with database.session_scope() as session, pytest.raises(AuthenticationError):
        identity.verify_token(session, issued.plaintext, hmac_key=KEY)
