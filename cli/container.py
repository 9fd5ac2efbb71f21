"""`unmask container ...`: anonymizer images (docs/container-contract.md).

Example::

    podman build -t example-pitch examples/anonymizer-container
    UNMASK_CONTAINER_ENGINE_URL=unix:///run/unmask-podman.sock unmask container check example-pitch

Exit code 0 when every check passes (warnings allowed), 1 when one fails.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from services.anonymizers.conformance import check_image
from services.anonymizers.container_sandbox import (
    ContainerEngineError,
    ContainerSandbox,
    SandboxLimits,
)
from services.errors import InvalidInputError
from services.settings import get_settings

container_app = typer.Typer(
    rich_markup_mode=None,  # plain help: rich tables cut long option names at 80 columns
    help="Anonymizer container images: conformance checks, digest pinning.",
    no_args_is_help=True,
)

_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red"}


@container_app.command("check")
def check_command(
    image: Annotated[str, typer.Argument(help="Image reference (name[:tag] or name@sha256:...).")],
    engine_url: Annotated[
        str | None,
        typer.Option(help="Docker Engine API URL; default UNMASK_CONTAINER_ENGINE_URL."),
    ] = None,
    pull: Annotated[bool, typer.Option(help="Pull the image when it is not local.")] = False,
    gpu: Annotated[bool, typer.Option(help="Request one GPU (UNMASK_DEVICE=cuda).")] = False,
) -> None:
    """Run the contract's conformance checks on IMAGE with a tiny job, in the sandbox."""
    settings = get_settings()
    sandbox = ContainerSandbox(
        engine_url=engine_url if engine_url is not None else settings.container_engine_url,
        pull=pull,
        limits=SandboxLimits.from_settings(settings),
    )
    console = Console()
    try:
        results = check_image(image, sandbox=sandbox, gpu=gpu)
    except ContainerEngineError as exc:
        raise InvalidInputError(str(exc)) from exc
    table = Table(title=f"contract v1 checks: {image}")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail", overflow="fold")
    for r in results:
        table.add_row(r.name, f"[{_STYLE[r.status]}]{r.status}[/]", r.detail)
    console.print(table)
    failed = [r for r in results if r.status == "fail"]
    if failed:
        console.print(f"[bold red]{len(failed)} check(s) failed[/]")
        raise typer.Exit(code=1)
    console.print("[green]the image follows the contract[/]")
