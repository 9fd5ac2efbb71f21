"""`make test` part by part, each part timed, and a table of the times at the end (`.ci/run`).

The parts are the prerequisites of the Makefile's ``test`` target, read from the Makefile (the
one list), run in that order as ``make <part>``; the ``pytest`` part runs in two steps, the test
suite and then ``tests/deploy`` (the deployment check, which runs only under CI, i.e. with
``CI`` set), so the table shows what the deployment check costs; the suite also lists its
slowest tests. The first failing part stops
the run (as ``make`` does), the table still prints, and the exit status is that part's.

    python3 scripts/ci_parts.py            # what .ci/run does
    python3 scripts/ci_parts.py --dry-run  # the commands only

Standard library only: on a clean clone it runs before the virtual environment exists.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEPLOY_TESTS = "tests/deploy"
SLOWEST_SHOWN = 30
"""The suite part lists its slowest tests (pytest ``--durations``): where CI time goes."""


@dataclass(frozen=True)
class Part:
    """One step of the CI run: its name in the table and its ``make`` arguments."""

    name: str
    make_args: tuple[str, ...]


@dataclass(frozen=True)
class Timing:
    """A part's wall time (s) and exit status (None: not run)."""

    part: Part
    seconds: float
    status: int | None


def target_prerequisites(makefile: Path, target: str = "test") -> list[str]:
    """The prerequisites of ``target`` in ``makefile`` (its rule line, continuation lines
    joined), in order."""
    text = makefile.read_text().replace("\\\n", " ")
    match = re.search(rf"^{re.escape(target)}\s*:(?!=)([^\n#]*)", text, flags=re.MULTILINE)
    if match is None:
        raise SystemExit(f"{makefile}: no rule for target {target!r}")
    return match.group(1).split()


def ci_parts(makefile: Path) -> list[Part]:
    """The parts of ``make test``; its ``pytest`` split into the suite and the deployment
    check."""
    parts: list[Part] = []
    for name in target_prerequisites(makefile):
        if name == "pytest":
            suite_args = f"--ignore={DEPLOY_TESTS} --durations={SLOWEST_SHOWN}"
            parts.append(Part("pytest", ("pytest", f"PYTEST_ARGS={suite_args}")))
            parts.append(Part("deployment check", ("pytest", f"PYTEST_ARGS={DEPLOY_TESTS}")))
        else:
            parts.append(Part(name, (name,)))
    return parts


def run_parts(parts: Sequence[Part], make: Sequence[str], *, dry_run: bool) -> list[Timing]:
    """Run each part with ``make`` (streaming its output) until one fails."""
    timings: list[Timing] = []
    failed = False
    for part in parts:
        command = [*make, *part.make_args]
        if dry_run or failed:
            if dry_run:
                print(" ".join(command), flush=True)
            timings.append(Timing(part, 0.0, None))
            continue
        print(f"== {part.name}: {' '.join(command)}", flush=True)
        started = time.monotonic()
        status = subprocess.call(command, cwd=REPO)
        timings.append(Timing(part, time.monotonic() - started, status))
        failed = status != 0
    return timings


def timing_table(timings: Sequence[Timing]) -> str:
    """The table printed at the end: part, seconds, status; then the total."""
    width = max([len("total"), *(len(t.part.name) for t in timings)])
    lines = [f"{'part':<{width}}  {'seconds':>8}  status"]
    for t in timings:
        status = "not run" if t.status is None else ("ok" if t.status == 0 else f"exit {t.status}")
        lines.append(f"{t.part.name:<{width}}  {t.seconds:>8.1f}  {status}")
    total = sum(t.seconds for t in timings)
    lines.append(f"{'total':<{width}}  {total:>8.1f}  ({total / 60:.1f} min)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--make", default="make", help="the make program (default: make)")
    parser.add_argument("--makefile", type=Path, default=REPO / "Makefile")
    args = parser.parse_args(argv)
    timings = run_parts(ci_parts(args.makefile), args.make.split(), dry_run=args.dry_run)
    print("\nCI parts (wall seconds):", flush=True)
    print(timing_table(timings), flush=True)
    return next((t.status for t in timings if t.status), 0)


if __name__ == "__main__":
    sys.exit(main())
