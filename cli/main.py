"""The `unmask` command line.

Every command calls `services/`; none imports FastAPI or Celery directly. Bad input ends with one
line on stderr and exit code 2, never a stack trace.
"""

from __future__ import annotations

import pickle
import sys
import zipfile

import click
import typer
import yaml
from typer._click import exceptions as typer_click_exceptions

from cli.admin import admin_app
from cli.analyses import analyses_app
from cli.anonymize import anonymize_command
from cli.challenge import phases_command, rerun_outdated_command
from cli.container import container_app
from cli.corpus import corpus_app
from cli.evaluate import demo_command, evaluate_command
from cli.export import export_command
from cli.submit import submit_command
from services.anonymizers.container_sandbox import ContainerEngineError

app = typer.Typer(
    rich_markup_mode=None,  # plain help: rich tables cut long option names at 80 columns
    name="unmask",
    help="Unmask: how much privacy does a voice anonymizer really give?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(
    corpus_app, name="corpus", help="Import, validate and synthesize corpora; build protocols."
)
app.add_typer(admin_app, name="admin", help="Teams and API tokens (operators).")
app.add_typer(container_app, name="container")
app.add_typer(
    analyses_app,
    name="analyses",
    help="SRD on representations, dataset-size study, pre-restoration attack.",
)
app.command("anonymize", help="Anonymize a protocol's audio with a built-in anonymizer.")(
    anonymize_command
)
app.command("evaluate", help="Run an evaluation config: anonymize, train, score, report.")(
    evaluate_command
)
app.command("demo", help="Run the demo evaluation (synthetic corpus, built-in pitch anonymizer).")(
    demo_command
)
app.command("submit", help="Submit to an Unmask server, wait, gate CI on privacy thresholds.")(
    submit_command
)
app.command("export", help="Write an evaluation's results in the VoicePrivacy layout.")(
    export_command
)
app.command("phases", help="List a protocol's challenge phases (Unmask server).")(phases_command)
app.command(
    "rerun-outdated",
    help="Administrators: re-run results of an older scorer with the current one (not charged).",
)(rerun_outdated_command)


# Unreadable or malformed input files (a directory, random bytes, a truncated archive) and an
# unreachable container engine: the input or the environment is wrong, not the code.
BAD_INPUT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    UnicodeDecodeError,
    EOFError,
    yaml.YAMLError,
    zipfile.BadZipFile,
    pickle.UnpicklingError,
    ContainerEngineError,
)


def _describe(exc: BaseException) -> str:
    """A user-facing sentence for an input error that carries no message of ours."""
    if isinstance(exc, OSError) and exc.filename is not None:
        reason = exc.strerror or type(exc).__name__
        return f"{exc.filename}: {reason}"
    if isinstance(exc, UnicodeDecodeError):
        return f"an input file is not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, (zipfile.BadZipFile, EOFError)):
        return f"an input file is truncated or not the expected format ({exc})"
    return str(exc) or type(exc).__name__


def _one_line(text: str) -> str:
    """Newlines in a message would break the one-line rule."""
    return " ".join(text.split())


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    from pydantic import ValidationError

    from services.errors import InvalidInputError
    from services.settings import apply_thread_settings

    try:
        apply_thread_settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        if not first["loc"]:  # a rule over several settings: its message names them
            print(f"unmask: {first['msg'].removeprefix('Value error, ')}", file=sys.stderr)
            return 2
        field = "UNMASK_" + "_".join(str(p) for p in first["loc"]).upper()
        print(f"unmask: environment variable {field}: {first['msg']}", file=sys.stderr)
        return 2
    try:
        result = app(args=argv, standalone_mode=False)
    except (click.exceptions.Exit, typer.Exit) as exc:
        return int(exc.exit_code)
    except (click.exceptions.Abort, typer.Abort):
        print("unmask: aborted", file=sys.stderr)
        return 130
    except typer_click_exceptions.NoArgsIsHelpError:
        return 2  # the help text was printed already
    except (click.UsageError, typer_click_exceptions.UsageError) as exc:
        # One line, naming the problem (click's own multi-line usage box is not wanted here).
        print(f"unmask: {exc.format_message()}", file=sys.stderr)
        return 2
    except InvalidInputError as exc:
        print(f"unmask: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except BAD_INPUT_ERRORS as exc:
        print(f"unmask: {_one_line(_describe(exc))}", file=sys.stderr)
        return 2
    return int(result) if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
