"""`.ci/run` (scripts/ci_parts.py): `make test`'s parts one by one, timed, with a table at the end.

A stand-in ``make`` (a shell script that logs its arguments, sleeps in one part and fails in
another) shows the order, the times, the stop at the first failure and the exit status; the
real Makefile gives the parts.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_parts", ROOT / "scripts/ci_parts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_parts_are_the_test_targets_prerequisites_with_the_deployment_check_apart() -> None:
    ci = _module()
    rule = re.search(r"^test:([^\n]*)", (ROOT / "Makefile").read_text(), flags=re.MULTILINE)
    assert rule is not None
    parts = ci.ci_parts(ROOT / "Makefile")
    names = [p.name for p in parts]
    assert names[:-1] == rule.group(1).split()  # the pytest part, then the deployment check
    assert names[-2:] == ["pytest", "deployment check"]
    assert parts[-2].make_args == ("pytest", "PYTEST_ARGS=--ignore=tests/deploy --durations=30")
    assert parts[-1].make_args == ("pytest", "PYTEST_ARGS=tests/deploy")


def _fake_make(tmp_path: Path, fail: str) -> tuple[Path, Path]:
    log = tmp_path / "calls.log"
    make = tmp_path / "make"
    make.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> {log}\n'
        '[ "$1" = lint ] && sleep 0.3\n'
        f'[ "$1" = {fail} ] && exit 3\n'
        "exit 0\n"
    )
    make.chmod(0o755)
    return make, log


def test_each_part_is_timed_and_the_first_failure_stops_the_run(tmp_path: Path) -> None:
    make, log = _fake_make(tmp_path, fail="typecheck")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/ci_parts.py"), "--make", str(make)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert log.read_text().splitlines() == ["venv", "services", "client-tool", "lint", "typecheck"]
    table = done.stdout.split("CI parts (wall seconds):\n")[1].splitlines()
    rows = {line[:16].strip(): line[16:].split() for line in table[1:]}
    assert float(rows["lint"][0]) >= 0.3 and rows["lint"][1] == "ok"
    assert float(rows["venv"][0]) < 0.3
    assert rows["typecheck"][1:] == ["exit", "3"]
    assert rows["pytest"] == ["0.0", "not", "run"]
    assert rows["deployment check"] == ["0.0", "not", "run"]
    parts_s = sum(float(seconds) for name, (seconds, *_) in rows.items() if name != "total")
    assert abs(float(rows["total"][0]) - parts_s) < 0.4  # each row is rounded to 0.1 s


def test_a_passing_run_exits_0_and_the_dry_run_runs_nothing(tmp_path: Path) -> None:
    make, log = _fake_make(tmp_path, fail="no-such-part")
    script = [sys.executable, str(ROOT / "scripts/ci_parts.py"), "--make", str(make)]
    dry = subprocess.run([*script, "--dry-run"], capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and not log.exists()
    assert f"{make} pytest PYTEST_ARGS=tests/deploy" in dry.stdout
    done = subprocess.run(script, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert len(log.read_text().splitlines()) == 7
    assert "not run" not in done.stdout and "deployment check" in done.stdout
