"""``UNMASK_OUTBOUND_ALLOW_PRIVATE_HOSTS`` governs every outbound call; its old name,
``UNMASK_WEBHOOK_ALLOW_PRIVATE_HOSTS``, still works (with one warning per process that names the
new one), and the new name wins when both are set."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from services import settings as settings_module
from services.settings import DEPRECATED_ALLOW_PRIVATE_HOSTS_VARIABLE, Settings

NEW = "UNMASK_OUTBOUND_ALLOW_PRIVATE_HOSTS"
OLD = "UNMASK_WEBHOOK_ALLOW_PRIVATE_HOSTS"


def _allowed(monkeypatch: pytest.MonkeyPatch, **variables: str) -> bool:
    for name in (NEW, OLD):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    return settings.outbound_allow_private_hosts


def test_the_new_name_and_the_old_one_both_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert DEPRECATED_ALLOW_PRIVATE_HOSTS_VARIABLE == OLD
    assert _allowed(monkeypatch) is False
    assert _allowed(monkeypatch, **{NEW: "1"}) is True
    assert _allowed(monkeypatch, **{OLD: "1"}) is True


def test_the_new_name_wins_when_both_are_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _allowed(monkeypatch, **{NEW: "0", OLD: "1"}) is False
    assert _allowed(monkeypatch, **{NEW: "1", OLD: "0"}) is True


def test_the_old_name_is_read_from_a_dotenv_file_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in (NEW, OLD):
        monkeypatch.delenv(name, raising=False)
    env_file = tmp_path / ".env"
    env_file.write_text(f"{OLD}=true\n")
    assert Settings(_env_file=env_file).outbound_allow_private_hosts is True  # type: ignore[call-arg]


def test_code_gives_it_by_its_field_name(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (NEW, OLD):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(_env_file=None, outbound_allow_private_hosts=True)  # type: ignore[call-arg]
    assert settings.outbound_allow_private_hosts is True


@pytest.mark.parametrize("where", ["environment", "dotenv"])
def test_the_old_name_is_warned_of_once_naming_the_new_one(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    where: str,
) -> None:
    for name in (NEW, OLD):
        monkeypatch.delenv(name, raising=False)
    env_file = tmp_path / ".env"
    env_file.write_text("")
    warn_once = settings_module._warn_of_the_old_allow_private_hosts_name
    warn_once.cache_clear()  # an earlier test may have used the old name in this process
    caplog.set_level(logging.WARNING, logger="services.settings")
    Settings(_env_file=env_file)
    assert not caplog.records  # neither name set: nothing to say
    if where == "environment":
        monkeypatch.setenv(OLD, "1")
    else:
        env_file.write_text(f"{OLD}=1\n")
    for _ in range(3):
        settings = Settings(_env_file=env_file)
        assert settings.outbound_allow_private_hosts is True
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert OLD in warnings[0] and NEW in warnings[0] and "deprecated" in warnings[0]
