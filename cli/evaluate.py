"""`unmask evaluate` and `unmask demo`: the evaluation pipeline, in-process, with progress bars."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from cli.progress import PlainProgress, stdout_console
from cli.result_table import summary_table
from cli.verdict import document_rows, print_verdict
from services.anonymizers.container_sandbox import ContainerSandbox
from services.anonymizers.kinds.registry import kind_of
from services.errors import InvalidInputError
from services.metrics import catalogue
from services.pipeline.config import EvaluationConfig, demo_config
from services.settings import get_settings

console = Console(stderr=True)
out_console = stdout_console()


def print_summary(result: dict[str, Any]) -> None:
    """The summary table of a result document (mean ± std over seeds), then each row's EER
    interval."""
    out_console.print(summary_table(result))
    eer = catalogue.EER
    for r in result["rows"]:
        low, high = r.get("eer_ci95_percent") or (None, None)
        if low is None or high is None:
            continue
        who = f"{r['attacker']}: " if r.get("attacker") else ""
        out_console.print(
            f"  {who}{r['scenario']:>14} {r['backend']:<6} seed {r['seed']}: "
            f"EER {eer.format(eer.value_in(r))} % (95 % CI {eer.format(low)}-{eer.format(high)}, "
            "speaker bootstrap)"
        )


def print_outcome(result: dict[str, Any], out_dir: Path) -> None:
    """The verdict block of a finished evaluation, with where its files are."""
    out_console.print()
    print_verdict(
        out_console,
        document_rows(result),
        result.get("trust"),
        where=f"{out_dir / 'results.json'}, plots in {out_dir / 'plots'}",
    )


class _ProgressBars:
    """One rich progress bar per stage name, updated from the pipeline's reporter."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, stage: str, fraction: float, message: str) -> None:
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(stage, total=1.0, note="")
        self.progress.update(self.tasks[stage], completed=fraction, note=message)


def run_with_progress(config: Any, out: Path, stages: Path | None = None) -> dict[str, Any]:
    """Run an evaluation showing progress bars on stderr; returns the result document."""
    # Imported when an evaluation runs: it loads torch, which `unmask`'s other commands never need.
    from services.pipeline.evaluation import run_evaluation

    settings = get_settings()
    columns = (
        TextColumn("{task.description:>10}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
    )

    def run(reporter: Callable[[str, float, str], None]) -> dict[str, Any]:
        return run_evaluation(
            config,
            out,
            cache_dir=settings.resolved_cache_dir(),
            progress=reporter,
            stages_dir=stages,
            sandbox=ContainerSandbox.from_settings(settings),
        )

    if not console.is_terminal:  # CI logs, redirected output: plain lines, a heartbeat
        with PlainProgress(sys.stderr) as plain:
            return run(plain)
    with Progress(*columns, console=console, transient=False) as progress:
        return run(_ProgressBars(progress))


def check_before_work(config: Path, out: Path | None, stages: Path | None) -> EvaluationConfig:
    """Fail before working: every problem of the config, its references and the output
    folders at once (one line, exit 2); then print the plan (stages, reuse, a rough time
    estimate) on stderr. Returns the checked config."""
    from services.pipeline.config_checks import load_checked_config, plan_lines

    for option, path in (("--out", out), ("--stages", stages)):
        if path is not None and path.exists() and not path.is_dir():
            raise InvalidInputError(f"{option} {path}: is a file, not a folder")
    cfg = load_checked_config(config, engine_url=get_settings().container_engine_url)
    out_dir = out if out is not None else Path(".unmask") / "evaluations" / cfg.name
    for line in plan_lines(cfg, stages if stages is not None else out_dir / "stages"):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return cfg


def evaluate_command(
    config: Annotated[Path, typer.Argument(help="Evaluation config (YAML).")],
    out: Annotated[Path | None, typer.Option("--out", help="Output folder.")] = None,
    stages: Annotated[
        Path | None,
        typer.Option(
            "--stages", help="Stage store shared between evaluations (default: OUT/stages)."
        ),
    ] = None,
) -> None:
    """Run an evaluation: anonymize, train the attacker(s), score, report."""
    cfg = check_before_work(config, out, stages)
    out_dir = out if out is not None else Path(".unmask") / "evaluations" / cfg.name
    result = run_with_progress(cfg, out_dir, stages)
    print_summary(result)
    print_outcome(result, out_dir)


def demo_command(
    out: Annotated[Path | None, typer.Option("--out", help="State folder of the demo.")] = None,
    in_process: Annotated[
        bool,
        typer.Option("--in-process", help="Run the pipeline in this process, without API/worker."),
    ] = False,
    serve: Annotated[
        bool, typer.Option("--serve", help="Keep the API and its pages up until Ctrl-C.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Also print the protocol's leaderboard as JSON (platform)."),
    ] = False,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="Start a new job instead of following the folder's earlier one (platform).",
        ),
    ] = False,
) -> None:
    """Demo: the built-in pitch anonymizer on the synthetic corpus, submitted over HTTP.

    Starts the API and a Celery worker on the embedded defaults (SQLite, local blob folder,
    filesystem broker), creates a team and a token, submits, follows the job and prints the
    result table and the verdict (``--json``: the leaderboard JSON too). A second run reuses the
    submission, the job and its stages; a job that failed or was cancelled is replaced by a fresh
    one (so is any with ``--fresh``). ``--in-process`` runs the same evaluation directly.
    """
    cfg = demo_config()
    out_dir = out if out is not None else get_settings().data_dir / "demo"
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidInputError(f"--out {out_dir}: is a file, not a folder")
    if not in_process:
        from cli.demo_platform import run_platform_demo

        raise typer.Exit(run_platform_demo(out_dir, cfg, serve=serve, as_json=as_json, fresh=fresh))
    console.print(
        f"Unmask demo: {kind_of(cfg.anonymizer).describe(cfg.anonymizer)}, synthetic corpus of "
        f"{cfg.synthetic.n_speakers} speakers, scenarios {', '.join(cfg.scenarios)}; "
        f"output in {out_dir}"
    )
    result = run_with_progress(cfg, out_dir)
    print_summary(result)
    print_outcome(result, out_dir)
