"""Which code computed a result: the installed Unmask version and the git commit when known."""

from __future__ import annotations

import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path


@cache
def git_revision() -> str | None:
    """The git commit of the checkout this code runs from; None outside a checkout (an
    installed wheel, a container image without ``.git``). Cached: a process's code does not
    change under it."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def unmask_version() -> str | None:
    """The installed ``unmask`` distribution's version; None when it is not installed."""
    try:
        return metadata.version("unmask")
    except metadata.PackageNotFoundError:
        return None
