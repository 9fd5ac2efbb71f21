"""`unmask admin protocol ...` and `unmask admin phase ...`: an organizer's protocols and
challenge phases, over HTTP (``UNMASK_URL``, ``UNMASK_TOKEN`` with the ``admin`` scope).

The same routes as ``POST /v1/admin/protocols`` and ``/v1/protocols/{id}/phases`` (docs/api.md):
the server validates everything (a protocol's config with the checks of ``unmask evaluate``); an
answer it refuses is one line on stderr with exit 2 (bad input) or 3 (auth, server, network).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.console import Console

from cli.client import UnmaskApiError, UnmaskClient, UnmaskConfigError
from cli.submit import _exit_for_api_error
from unmask_client.submit import EXIT_BAD_INPUT

err = Console(stderr=True)
out = Console()

protocol_app = typer.Typer(
    rich_markup_mode=None,
    help="Register and list protocols (over HTTP, admin token).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
phase_app = typer.Typer(
    rich_markup_mode=None,
    help="Add, change, list and delete a protocol's challenge phases (over HTTP, admin token).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PROTOCOL_OPTION = typer.Option(
    ..., "--protocol", "-p", help="Protocol name (latest version), name@VERSION or id."
)
# Keys of an evaluation config that a protocol does not take (each submission brings its
# anonymizer; each job is named after its submission).
NOT_IN_A_PROTOCOL = ("anonymizer", "name")


@contextmanager
def _client(command: str) -> Iterator[UnmaskClient]:
    """An API client; configuration and API errors end the command with one line."""
    try:
        with UnmaskClient.from_env() as client:
            yield client
    except UnmaskConfigError as exc:
        err.print(f"unmask admin {command}: {exc}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except UnmaskApiError as exc:
        err.print(f"unmask admin {command}: {exc}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(_exit_for_api_error(exc)) from None


def _say(text: str) -> None:
    out.print(text, highlight=False, markup=False, soft_wrap=True)


def read_protocol_config(path: Path) -> dict[str, Any]:
    """An evaluation config file (YAML or JSON) as a protocol's config: its ``anonymizer`` and
    ``name`` are left out (said on stderr)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UnmaskConfigError(f"{path}: expected a mapping of config fields at the top level")
    dropped = [key for key in NOT_IN_A_PROTOCOL if key in data]
    if dropped:
        err.print(
            f"{path}: {', '.join(dropped)} left out (a protocol takes each submission's"
            " anonymizer; jobs are named after their submissions)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    return {k: v for k, v in data.items() if k not in NOT_IN_A_PROTOCOL}


@protocol_app.command("register")
def register_protocol_command(
    name: str = typer.Argument(help="Protocol name: lowercase letters, digits, '.', '_', '-'."),
    config: Path = typer.Argument(help="Evaluation config (YAML or JSON), without anonymizer."),
    description: str = typer.Option("", help="What the protocol evaluates."),
    metric: str | None = typer.Option(None, help="Leaderboard metric (default eer_percent)."),
    scenario: str | None = typer.Option(None, help="Leaderboard scenario."),
    backend: str | None = typer.Option(None, help="Leaderboard scoring back-end."),
    lower_is_better: bool = typer.Option(
        False, "--lower-is-better", help="Rank the metric ascending (EER: higher is better)."
    ),
) -> None:
    """Register a protocol, or its next version (the same content: the existing version)."""
    leaderboard: dict[str, Any] = {"metric": metric, "scenario": scenario, "backend": backend}
    leaderboard = {k: v for k, v in leaderboard.items() if v is not None}
    leaderboard["higher_is_better"] = not lower_is_better
    with _client("protocol register") as client:
        body = {
            "name": name,
            "description": description,
            "config": read_protocol_config(config),
            "leaderboard": leaderboard,
        }
        protocol = client.register_protocol(body)
    _say(
        f"protocol {protocol['name']} v{protocol['version']} (id {protocol['id']})"
        f" {'registered' if protocol.get('created') else 'unchanged (same content)'}"
    )


@protocol_app.command("list")
def list_protocols_command(
    name: str | None = typer.Option(None, help="Only this name's versions."),
) -> None:
    """List protocols: id, name, version."""
    with _client("protocol list") as client:
        protocols = client.protocols(name=name)
    if not protocols:
        _say("no protocols")
    for p in protocols:
        _say(f"{p['id']}: {p['name']} v{p['version']}  {p.get('description') or ''}".rstrip())


def _when(text: str | None, option: str) -> str | None:
    """An ISO 8601 time with a time zone (``now`` is the current time), as sent."""
    if text is None:
        return None
    if text == "now":
        return dt.datetime.now(dt.UTC).isoformat()
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UnmaskConfigError(
            f"{option} {text!r}: expected an ISO 8601 time, e.g. 2026-05-01T00:00:00+00:00"
        ) from None
    if value.tzinfo is None:
        raise UnmaskConfigError(f"{option} {text!r}: needs a time zone, e.g. +00:00 or Z")
    return value.isoformat()


def _phase_line(p: dict[str, Any]) -> str:
    visibility = f"hidden until {p['reveal_at']}" if p["visibility"] == "hidden" else "public"
    limit = p["submission_limit"] or "no limit"
    state = "open" if p["open"] else "closed"
    return (
        f"{p['name']}: {p['starts_at']} to {p['ends_at'] or 'no end'}, {limit} jobs per team,"
        f" {visibility}, {state}"
    )


def _phase_body(
    starts_at: str | None,
    ends_at: str | None,
    limit: int | None,
    hidden: bool | None,
    reveal_at: str | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "starts_at": _when(starts_at, "--starts-at"),
        "ends_at": _when(ends_at, "--ends-at"),
        "submission_limit": limit,
        "reveal_at": _when(reveal_at, "--reveal-at"),
    }
    if hidden is not None:
        body["visibility"] = "hidden" if hidden else "public"
    return {k: v for k, v in body.items() if v is not None}


def _with_protocol(command: str, protocol: str, action: Callable[[UnmaskClient, int], Any]) -> Any:
    with _client(command) as client:
        found = client.find_protocol(protocol)
        return action(client, int(found["id"]))


@phase_app.command("add")
def add_phase_command(
    name: str = typer.Argument(help="Phase name, e.g. development or evaluation."),
    protocol: str = PROTOCOL_OPTION,
    starts_at: str = typer.Option("now", help="ISO 8601 time with a zone, or now."),
    ends_at: str | None = typer.Option(None, help="ISO 8601 time with a zone (none: no end)."),
    limit: int | None = typer.Option(None, "--limit", help="Jobs per team in this phase."),
    hidden: bool = typer.Option(
        False, "--hidden", help="Results hidden (but from the team) until --reveal-at."
    ),
    reveal_at: str | None = typer.Option(None, help="Hidden phases: when results are shown."),
) -> None:
    """Add a phase to a protocol (its window must not overlap another's)."""
    with _client("phase add") as client:
        body = {"name": name, **_phase_body(starts_at, ends_at, limit, hidden, reveal_at)}
        phase = client.create_phase(int(client.find_protocol(protocol)["id"]), body)
    _say(_phase_line(phase))


@phase_app.command("update")
def update_phase_command(
    name: str = typer.Argument(help="Phase name."),
    protocol: str = PROTOCOL_OPTION,
    starts_at: str | None = typer.Option(None, help="ISO 8601 time with a zone, or now."),
    ends_at: str | None = typer.Option(None, help="ISO 8601 time with a zone, or now."),
    limit: int | None = typer.Option(None, "--limit", help="Jobs per team in this phase."),
    hidden: bool | None = typer.Option(None, "--hidden/--public", help="Visibility."),
    reveal_at: str | None = typer.Option(None, help="now (reveal at once) or a later time."),
) -> None:
    """Change a phase's window, limit or visibility (the options given)."""
    with _client("phase update") as client:
        body = _phase_body(starts_at, ends_at, limit, hidden, reveal_at)
        phase = client.update_phase(int(client.find_protocol(protocol)["id"]), name, body)
    _say(_phase_line(phase))


@phase_app.command("list")
def list_phases_command(protocol: str = PROTOCOL_OPTION) -> None:
    """List a protocol's phases."""
    phases = _with_protocol("phase list", protocol, lambda client, pid: client.phases(pid))
    if not phases:
        _say("no phases: jobs are accepted at any time, results are public")
    for p in phases:
        _say(_phase_line(p))


@phase_app.command("delete")
def delete_phase_command(
    name: str = typer.Argument(help="Phase name."), protocol: str = PROTOCOL_OPTION
) -> None:
    """Delete a phase that has no jobs (end it instead when it has)."""
    _with_protocol("phase delete", protocol, lambda client, pid: client.delete_phase(pid, name))
    _say(f"phase {name} deleted")
