"""`--help` of every command is readable at 80 columns: every option name shown in full.

Commands are discovered from the typer app (tests/unit/test_cli_bad_input.py walks the same
tree), so a new command or option is checked without editing this file.
"""

from __future__ import annotations

import pytest
import typer.main

from cli.main import app, main


def _commands() -> list[tuple[tuple[str, ...], list[str]]]:
    """(word path, every option string) of every command and group."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root)  # type: ignore[arg-type]
    found: list[tuple[tuple[str, ...], list[str]]] = []

    def walk(cmd: object, path: tuple[str, ...]) -> None:
        names = [
            o
            for p in cmd.params  # type: ignore[attr-defined]
            if p.param_type_name == "option" and not p.hidden
            for o in (*p.opts, *p.secondary_opts)
        ]
        found.append((path, names))
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*path, name))

    walk(root, ())
    return found


def _help(
    path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    # click's formatter reads the terminal width from COLUMNS (shutil.get_terminal_size).
    monkeypatch.setenv("COLUMNS", "80")
    capsys.readouterr()
    assert main([*path, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("path,options", _commands(), ids=lambda x: " ".join(x) or "unmask")
def test_help_at_80_columns_shows_every_option_in_full(
    path: tuple[str, ...],
    options: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _help(path, monkeypatch, capsys)
    widths = [len(line) for line in out.splitlines()]
    assert max(widths) <= 80, f"help wider than 80 columns: {max(widths)}"
    words = set(out.replace(",", " ").split())
    cut = [o for o in options if o not in words]
    assert not cut, f"`unmask {' '.join(path)} --help` at 80 columns cuts {cut}:\n{out}"
    assert "…" not in out, out


def test_the_analyses_group_names_every_analysis(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The group's one-line help (also `unmask --help`'s line) names each of its commands."""
    out = _help(("analyses",), monkeypatch, capsys)
    summary = " ".join(out.split("Options:")[0].split())
    for topic in ("SRD", "dataset-size", "pre-restoration"):
        assert topic in summary, out
    for command in ("size-study", "srd", "prerestore"):
        assert command in out
