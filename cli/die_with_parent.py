"""Run a command that dies with its parent: ``python -m cli.die_with_parent PROGRAM ARGS...``.

Sets Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, kept across ``exec``)
and then becomes ``PROGRAM``: when the process that started it ends, however it ends (SIGKILL
included), the kernel kills the child too. ``UNMASK_PARENT_PID`` names the expected parent: a
parent that died before the signal was set is noticed and the child exits at once. Elsewhere
than Linux the command runs without the guard (the caller still stops it on a normal exit).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PARENT_PID_VARIABLE = "UNMASK_PARENT_PID"


def set_parent_death_signal(signum: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``signum`` to this process when its parent ends; False where
    that is not available (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)) == 0


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m cli.die_with_parent PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    set_parent_death_signal()
    expected = os.environ.get(PARENT_PID_VARIABLE)
    if expected is not None and expected.isdigit() and os.getppid() != int(expected):
        return 1  # the parent is gone already (we were re-parented before the guard was set)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
