"""`unmask export`: an evaluation's results in another toolkit's layout (VoicePrivacy)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from services.errors import ConfigError


def export_command(
    results_dir: Annotated[Path, typer.Argument(help="An evaluation's output folder.")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write the files into.")],
    fmt: Annotated[str, typer.Option("--format", help="Layout of the files: vpc.")] = "vpc",
    suffix: Annotated[
        str | None,
        typer.Option(
            "--suffix",
            help="Anonymization suffix in the file names (_b1); default: the one detected in "
            "the evaluated VoicePrivacy-layout archive.",
        ),
    ] = None,
    attacker: Annotated[
        str | None,
        typer.Option(
            "--attacker", help="The zoo attacker to export (default vpc2024, or the only one)."
        ),
    ] = None,
) -> None:
    """Write an evaluation's results as the VoicePrivacy 2024 toolkit does: exp/asv_orig,
    exp/asv_anon<suffix>, exp/asr and exp/results_summary (result_for_rank<suffix>)."""
    if fmt != "vpc":
        raise ConfigError(f"--format {fmt!r}: the one format is vpc")
    from services.pipeline.vpc_export import export_vpc

    written = export_vpc(results_dir, out, suffix=suffix, attacker=attacker)
    console = Console(highlight=False, soft_wrap=True)
    for path in written:
        console.print(f"wrote {path}", markup=False)
