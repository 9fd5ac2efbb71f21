"""The commands of docs/getting-started.md work as written.

Every line of the page's fenced ``bash`` blocks runs in a fresh folder (``examples/`` linked in),
``.venv/bin/unmask`` standing for this checkout's CLI, and must exit 0; a line that starts long
work says so with a ``# long`` comment and is not run, but the configs it names must pass the
up-front checks. A line that starts an evaluation, the demo or a make target without the marker
fails the test, so the split stays honest.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from services.pipeline.config_checks import load_checked_config

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "getting-started.md"
LONG = re.compile(r"#\s*long\b")
STARTS_LONG_WORK = re.compile(r"\bunmask (evaluate|demo)\b|^make\b")


def _bash_lines() -> list[str]:
    lines: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", PAGE.read_text(), flags=re.S | re.M):
        for line in block.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(line.strip())
    return lines


def test_page_has_quick_and_long_commands() -> None:
    lines = _bash_lines()
    assert any(not LONG.search(x) for x in lines) and any(LONG.search(x) for x in lines)


@pytest.mark.parametrize("line", [x for x in _bash_lines() if LONG.search(x)])
def test_long_commands_are_valid_without_running(line: str) -> None:
    words = shlex.split(line.split("#")[0])
    for word in words:
        if word.startswith("examples/"):
            assert (REPO / word).exists(), f"{line}: {word} does not exist"
    if "evaluate" in words:
        config = words[words.index("evaluate") + 1]
        load_checked_config(REPO / config)  # raises ConfigError naming every problem


@pytest.mark.slow  # about 40 s on 2 cores: a small corpus is generated and anonymized
def test_quick_commands_run_as_written(tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "UNMASK_DATA_DIR": str(tmp_path / ".unmask"),
        "UNMASK_NUM_THREADS": "1",
    }
    cli = f"{shlex.quote(sys.executable)} -m cli.main"
    quick = [x for x in _bash_lines() if not LONG.search(x)]
    for line in quick:
        assert not STARTS_LONG_WORK.search(line), f"mark long work with `# long`: {line}"
        command = re.sub(r"^\.venv/bin/unmask\b", cli, line)
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert (tmp_path / "data" / "anon" / "trial" / "manifest.jsonl").is_file()
