"""UNMASK_NUM_THREADS reaches torch in every entry point (the CLI used to ignore it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cli.main import main
from services.settings import Settings, apply_thread_settings


def test_apply_thread_settings_sets_torch_threads() -> None:
    # 0 (the available CPUs) is tested in test_threads.py
    import torch

    before = torch.get_num_threads()
    try:
        apply_thread_settings(Settings(num_threads=1))
        assert torch.get_num_threads() == 1
        apply_thread_settings(Settings(num_threads=2))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_cli_applies_unmask_num_threads_before_any_command() -> None:
    # A fresh interpreter: torch starts with 2 threads; after a CLI command it must have
    # the 1 thread UNMASK_NUM_THREADS asks for.
    code = (
        "import torch; torch.set_num_threads(2); from cli.main import main; "
        "main(['corpus', '--help']); print('threads', torch.get_num_threads())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**_base_env(), "UNMASK_NUM_THREADS": "1"},
        check=True,
    )
    assert "threads 1" in out.stdout


def test_bad_environment_variable_is_one_line_and_exit_code_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from services.settings import get_settings

    monkeypatch.setenv("UNMASK_NUM_THREADS", "many")
    get_settings.cache_clear()
    try:
        assert main(["corpus", "--help"]) == 2
    finally:
        get_settings.cache_clear()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "UNMASK_NUM_THREADS" in err[0] and "integer" in err[0]


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("UNMASK_")}
