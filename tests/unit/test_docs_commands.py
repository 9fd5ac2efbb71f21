"""Every command in the `bash` blocks of README.md and docs/*.md is either run by a test or
marked as an example, and every `unmask` command among them parses against the real CLI.

Markers (in the page, where a reader sees them):

- a block whose first line is ``# example: <why>`` needs something a test cannot give it here
  (a running server, Docker, downloaded weights, files of your own): its commands are not run;
- a line ending in ``# long: <what>`` starts long work (an evaluation, the demo, a make target):
  not run, but the example files it names must exist;
- any other line is run: the pages in ``RUN`` line by line in a fresh folder (a block whose
  first line reads ``# (after ...)`` after the page's other blocks)
  (``examples/`` linked in, ``.venv/bin/unmask`` and ``unmask`` standing for this checkout's
  CLI), each line exiting 0. docs/getting-started.md has its own test
  (tests/unit/test_docs_getting_started.py).

Whatever the marker, each `unmask ...` invocation (also inside ``$(...)`` and after ``docker
compose exec``) must name an existing command with existing options and valid values: click
parses it without running it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer._click import exceptions as click_exceptions

from cli.main import app

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
EXAMPLE = re.compile(r"^#\s*example:")
LONG = re.compile(r"#\s*long\b")
# What an unmarked line may start with: commands that need nothing but this checkout.
RUNNABLE = re.compile(
    r"^(\.venv/bin/)?unmask\b|^(printf|echo|mkdir|cat|head|test|ls|export [A-Z_]+=[^$]*$)\b"
)
RUN = ["docs/anonymizers.md", "docs/data.md", "docs/synthetic-corpus.md"]
UNMASK = re.compile(r"(?<![\w/-])(?:\.venv/bin/)?unmask\s+([^;&|)#\n]*)")
# What may stand before `unmask` in command position: nothing, a shell separator, a command
# substitution, variable assignments, `docker compose exec [-T] SERVICE`.
COMMAND_POSITION = re.compile(
    r"(^\s*|\$\(\s*|[;&|]\s*|\bexec(\s+-\w+)*\s+[\w-]+\s+|^(\w+=\S*\s+)+)$"
)


def _blocks(page: Path) -> list[list[str]]:
    """The page's bash blocks, as logical lines (backslash continuations joined)."""
    blocks = []
    for block in re.findall(r"^```bash\n(.*?)^```", page.read_text(), flags=re.S | re.M):
        block = re.sub(r"\\\n\s*", " ", block)
        blocks.append([line.strip() for line in block.splitlines() if line.strip()])
    return blocks


def _commands(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.startswith("#")]


def _all_lines() -> list[tuple[str, str, bool]]:
    """(page, line, marked as an example block) of every command line of every page."""
    found = []
    for page in PAGES:
        for block in _blocks(page):
            example = bool(EXAMPLE.match(block[0]))
            found += [(page.name, line, example) for line in _commands(block)]
    return found


def _unmask_args(line: str) -> list[list[str]]:
    """The argument lists of the `unmask` invocations on a line (comments dropped)."""
    code = line if "'" in line.split("#")[0] else line.split(" #")[0]
    return [
        shlex.split(m.group(1))
        for m in UNMASK.finditer(code)
        if m.group(1).strip() and COMMAND_POSITION.search(code[: m.start()])
    ]


def _parse(args: list[str]) -> None:
    """click parses ``unmask ARGS`` down to the leaf command, without running it."""
    command: Any = typer.main.get_command(app)
    name = "unmask"
    while hasattr(command, "list_commands"):  # a group: walk down to the leaf command
        assert args, f"`{name}` needs a subcommand"
        if args[0] == "--help":
            return
        sub = command.get_command(typer.Context(command), args[0])
        assert sub is not None, f"`{name}` has no command {args[0]!r}"
        name, command, args = f"{name} {args[0]}", sub, args[1:]
    if "--help" in args:
        return
    with command.make_context(name, list(args)):  # raises UsageError on a bad option
        pass


def test_every_line_is_run_or_marked() -> None:
    unmarked = [
        f"{page}: {line}"
        for page, line, example in _all_lines()
        if not example and not LONG.search(line) and not RUNNABLE.search(line)
    ]
    assert not unmarked, "mark these as `# example: <why>` blocks or `# long`:\n" + "\n".join(
        unmarked
    )
    runnable_pages = {
        page for page, line, example in _all_lines() if not example and not LONG.search(line)
    }
    assert runnable_pages <= {Path(p).name for p in RUN} | {"getting-started.md"}, runnable_pages


@pytest.mark.parametrize(
    ("page", "line"),
    [(p, line) for p, line, _ in _all_lines() if _unmask_args(line)],
    ids=lambda x: x if len(x) < 60 else x[:60],
)
def test_every_unmask_command_parses(page: str, line: str) -> None:
    for args in _unmask_args(line):
        try:
            _parse(args)
        except click_exceptions.UsageError as exc:
            pytest.fail(f"{page}: {line}\n  unmask {' '.join(args)}: {exc.format_message()}")


def test_long_lines_name_existing_examples() -> None:
    for page, line, _ in _all_lines():
        if LONG.search(line):
            for word in shlex.split(line.split("#")[0]):
                if word.startswith("examples/"):
                    assert (REPO / word).exists(), f"{page}: {line}: {word} does not exist"


@pytest.mark.slow  # corpora of a few speakers are generated and anonymized
@pytest.mark.parametrize("page", RUN)
def test_runnable_lines_run_as_written(page: str, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "UNMASK_DATA_DIR": str(tmp_path / ".unmask"),
        "UNMASK_NUM_THREADS": "1",
    }
    cli = f"{shlex.quote(sys.executable)} -m cli.main"
    ran = 0
    blocks = _blocks(REPO / page)
    # A block that says it comes "(after ... below)" runs after the page's other blocks.
    blocks.sort(key=lambda block: block[0].startswith("# (after"))
    for block in blocks:
        if EXAMPLE.match(block[0]):
            continue
        for line in _commands(block):
            if LONG.search(line):
                continue
            command = re.sub(r"(^|(?<=[\s(]))(\.venv/bin/)?unmask\b", cli, line)
            # A documented failure (`# exit code 2`) is expected to fail that way.
            expected = 2 if re.search(r"#\s*exit code 2", line) else 0
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == expected, (
                f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
            ran += 1
    assert ran > 0
