"""`unmask admin create-team / create-token / revoke-token` on an SQLite database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.main import main
from services.platform import identity
from services.settings import get_settings
from services.storage.db import Database
from services.storage.errors import AuthenticationError, PermissionDeniedError
from services.storage.migrate import upgrade_database


@pytest.fixture()
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    url = f"sqlite:///{tmp_path / 'unmask.db'}"
    upgrade_database(url)
    monkeypatch.setenv("UNMASK_DATABASE_URL", url)
    monkeypatch.setenv("UNMASK_TOKEN_HMAC_KEY", "cli-test-key")
    get_settings.cache_clear()
    db = Database(url)
    yield db
    db.dispose()
    get_settings.cache_clear()


def test_create_team_and_token_print_the_plaintext_once(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["admin", "create-team", "speech-lab"]) == 0
    assert "speech-lab" in capsys.readouterr().out
    code = main(
        ["admin", "create-token", "--team", "speech-lab", "--scopes", "submit,read",
         "--expires-days", "2"]
    )  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    plaintext = captured.out.strip()
    assert plaintext.startswith("unm_") and "\n" not in plaintext
    assert "expires" in captured.err and plaintext not in captured.err
    with database.session_scope() as session:
        token = identity.verify_token(
            session, plaintext, hmac_key="cli-test-key", required_scope="submit"
        )
        assert token.user.team.slug == "speech-lab" and token.expires_at is not None
        with pytest.raises(PermissionDeniedError):
            identity.verify_token(
                session, plaintext, hmac_key="cli-test-key", required_scope="admin"
            )
        token_id = token.id
    assert main(["admin", "revoke-token", str(token_id)]) == 0
    with database.session_scope() as session, pytest.raises(AuthenticationError, match="revoked"):
        identity.verify_token(session, plaintext, hmac_key="cli-test-key")


def test_bad_input_is_one_line_and_exit_code_2(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["admin", "create-team", "Not A Slug"]) == 2
    assert "slug" in capsys.readouterr().err
    assert main(["admin", "create-token", "--team", "missing", "--scopes", "read"]) == 2
    assert "missing" in capsys.readouterr().err
    assert main(["admin", "create-team", "lab"]) == 0
    assert main(["admin", "create-token", "--team", "lab", "--scopes", "root"]) == 2
    assert "root" in capsys.readouterr().err


def test_create_token_for_a_missing_team_refuses_or_creates_it(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["admin", "create-token", "--team", "my-lab"]) == 2
    err = capsys.readouterr().err
    assert "team 'my-lab' not found: create it first" in err and "--create-team" in err
    assert main(["admin", "create-token", "--team", "my-lab", "--create-team"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip().startswith("unm_") and "team my-lab" in captured.err
    with database.session_scope() as session:
        assert identity.get_team_by_slug(session, "my-lab").slug == "my-lab"
    # The team exists now: --create-team is harmless, the plain command works.
    assert main(["admin", "create-token", "--team", "my-lab", "--create-team"]) == 0
    assert main(["admin", "create-token", "--team", "my-lab"]) == 0
