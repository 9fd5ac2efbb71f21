"""Every setting is documented: docs/deploy.md names each `Settings` field by its env var."""

from __future__ import annotations

from pathlib import Path

from services.settings import Settings

DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


def test_every_setting_appears_in_the_deploy_guide() -> None:
    text = DEPLOY_DOC.read_text()
    missing = [
        f"UNMASK_{name.upper()}"
        for name in Settings.model_fields
        if f"UNMASK_{name.upper()}" not in text
    ]
    assert not missing, f"document these settings in docs/deploy.md: {missing}"


def test_the_default_token_key_is_refused_with_a_server_database() -> None:
    import pytest
    from pydantic import ValidationError

    from services.settings import DEV_TOKEN_HMAC_KEY

    server = "postgresql+psycopg://u@db/unmask"
    with pytest.raises(ValidationError, match="UNMASK_TOKEN_HMAC_KEY"):
        Settings(_env_file=None, database_url=server, allow_dev_token_hmac_key=False)  # type: ignore[call-arg]
    # Set: fine; the embedded mode (SQLite) and test suites keep the default.
    assert Settings(_env_file=None, database_url=server, token_hmac_key="x" * 32)  # type: ignore[call-arg]
    embedded = Settings(_env_file=None, database_url="", allow_dev_token_hmac_key=False)  # type: ignore[call-arg]
    assert embedded.token_hmac_key == DEV_TOKEN_HMAC_KEY
