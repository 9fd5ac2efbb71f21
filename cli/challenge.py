"""`unmask rerun-outdated` and `unmask phases`: challenge organizers' commands over HTTP
(``UNMASK_URL``, ``UNMASK_TOKEN``; re-running needs an admin token)."""

from __future__ import annotations

import typer
from rich.console import Console

from cli.client import UnmaskApiError, UnmaskClient, UnmaskConfigError
from cli.submit import _exit_for_api_error
from unmask_client.submit import EXIT_BAD_INPUT, EXIT_PASSED

err = Console(stderr=True)
out = Console()


def rerun_outdated_command(
    protocol: str = typer.Option(
        ..., "--protocol", "-p", help="Protocol name (latest version), name@VERSION or id."
    ),
    include_current: bool = typer.Option(
        False, "--all", help="Re-run every leaderboard result, not only older scorers'."
    ),
) -> None:
    """Queue uncharged re-runs of the protocol's results of an older scorer."""
    try:
        with UnmaskClient.from_env() as client:
            found = client.find_protocol(protocol)
            plan = client.rerun_outdated(found["id"], include_current=include_current)
    except UnmaskConfigError as exc:
        err.print(f"unmask rerun-outdated: {exc}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except UnmaskApiError as exc:
        err.print(f"unmask rerun-outdated: {exc}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(_exit_for_api_error(exc)) from None
    out.print(f"current scorer {plan['current_scorer']}", highlight=False, markup=False)
    for old, new in plan["queued"].items():
        out.print(f"job {old} -> re-run job {new}", highlight=False, markup=False)
    for submission in plan["already_running"]:
        out.print(f"submission {submission}: a re-run is already queued", markup=False)
    out.print(f"{len(plan['queued'])} re-runs queued (not charged)", markup=False)
    raise typer.Exit(EXIT_PASSED)


def phases_command(
    protocol: str = typer.Option(
        ..., "--protocol", "-p", help="Protocol name (latest version), name@VERSION or id."
    ),
) -> None:
    """List the protocol's phases (window, per-team limit, visibility, open now)."""
    try:
        with UnmaskClient.from_env() as client:
            found = client.find_protocol(protocol)
            phases = client.phases(found["id"])
    except UnmaskConfigError as exc:
        err.print(f"unmask phases: {exc}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except UnmaskApiError as exc:
        err.print(f"unmask phases: {exc}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(_exit_for_api_error(exc)) from None
    if not phases:
        out.print("no phases: jobs are accepted at any time, results are public", markup=False)
    for p in phases:
        visibility = f"hidden until {p['reveal_at']}" if p["visibility"] == "hidden" else "public"
        limit = p["submission_limit"] or "no limit"
        state = "open" if p["open"] else "closed"
        out.print(
            f"{p['name']}: {p['starts_at']} to {p['ends_at'] or 'no end'}, {limit} jobs per "
            f"team, {visibility}, {state}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
