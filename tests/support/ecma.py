"""ECMA-262 regular expressions as a browser compiles them: node, where it is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest


def run_node(script: str, data: Any, folder: Path) -> Any:
    """Run ``script`` in node with ``data`` (JSON, written under ``folder``) at
    ``require(process.argv[1])``; returns what it printed, parsed as JSON. Skips the test where
    node is not installed."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to compile the patterns as ECMA-262")
    path = folder / "ecma-data.json"
    path.write_text(json.dumps(data))
    ran = subprocess.run([node, "-e", script, str(path)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)
