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
