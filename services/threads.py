"""How many CPU threads a process uses, and how its OpenMP threads wait (torch-free).

Two rules, measured in ``benchmarks/contention.py`` (docs/performance.md):

- **Threads = the CPUs this process may really use**: the CPUs of its affinity mask
  (``os.sched_getaffinity``: ``taskset``, cpusets) and its cgroup CPU quota (v2 ``cpu.max``,
  v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``: ``docker --cpus``, Kubernetes limits), the
  quota rounded up. ``os.cpu_count()`` counts the host's CPUs, which a container may not have.
- **OpenMP threads never spin-wait** (``OMP_WAIT_POLICY=PASSIVE``): a spinning thread burns the
  core that another process (or this process's own slower thread) needs, which made a training
  step 4-5x slower beside one busy process on a 2-core machine.

The OpenMP runtime (GNU libgomp in torch's wheels) reads ``OMP_WAIT_POLICY`` once, when the
library loads, i.e. when torch (or numpy's BLAS) is first imported: setting it later has no
effect. So every entry point calls :func:`services.settings.prepare_thread_environment` before
anything imports torch (the ``cli``, ``workers`` and ``api`` packages do it in their
``__init__``), and :func:`services.settings.apply_thread_settings` then sets torch's intra-op
threads.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Callable, MutableMapping
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")

WAIT_POLICIES = {"passive": "PASSIVE", "active": "ACTIVE"}
"""``UNMASK_OMP_WAIT_POLICY`` values and the ``OMP_WAIT_POLICY`` they set (``unset``: neither)."""


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def parse_cpu_max(text: str) -> float | None:
    """CPUs allowed by a cgroup v2 ``cpu.max`` line (``"<quota> <period>"`` in microseconds, or
    ``"max <period>"``: no limit); None for no limit or an unreadable line."""
    parts = text.split()
    if not parts or parts[0] == "max":
        return None
    try:
        quota = float(parts[0])
        period = float(parts[1]) if len(parts) > 1 else 100_000.0
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_cfs_quota(quota_text: str, period_text: str) -> float | None:
    """CPUs allowed by cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (microseconds;
    a quota of -1 means no limit)."""
    try:
        quota, period = float(quota_text), float(period_text)
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _self_cgroup_paths(self_cgroup: Path) -> tuple[str | None, str | None]:
    """This process's cgroup v2 path and cgroup v1 ``cpu`` controller path (``/proc/self/cgroup``
    lines ``id:controllers:path``)."""
    v2: str | None = None
    v1: str | None = None
    for line in (_read(self_cgroup) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            v2 = path
        elif "cpu" in controllers.split(","):
            v1 = path
    return v2, v1


def _ancestors(base: Path, path: str) -> list[Path]:
    """``base/path`` and each of its parents up to ``base`` (a quota anywhere above applies)."""
    parts = [p for p in path.split("/") if p and p != ".."]
    return [base.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]


def cgroup_cpu_limit(root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP) -> float | None:
    """The smallest CPU quota (in CPUs, may be fractional) over this process's cgroup and its
    ancestors, cgroup v2 and v1; None when no quota is set or nothing is readable.

    Inside a container the process's cgroup is usually mounted as the root itself, so the root's
    own files are read too.
    """
    v2_path, v1_path = _self_cgroup_paths(self_cgroup)
    limits: list[float] = []
    v2_bases = [root, root / "unified"]
    for base in v2_bases:
        for folder in _ancestors(base, v2_path or "/"):
            text = _read(folder / "cpu.max")
            limit = parse_cpu_max(text) if text is not None else None
            if limit is not None:
                limits.append(limit)
    for base in (root / "cpu", root / "cpu,cpuacct", root / "cpuacct,cpu"):
        for folder in _ancestors(base, v1_path or "/"):
            quota = _read(folder / "cpu.cfs_quota_us")
            period = _read(folder / "cpu.cfs_period_us")
            limit = parse_cfs_quota(quota, period) if quota and period else None
            if limit is not None:
                limits.append(limit)
    return min(limits) if limits else None


def _affinity_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def available_cpus(
    *,
    affinity: Callable[[], int] = _affinity_count,
    root: Path = CGROUP_ROOT,
    self_cgroup: Path = SELF_CGROUP,
) -> int:
    """CPUs this process may really use: its affinity mask, capped by its cgroup quota rounded
    up (a quota of 1.5 CPUs gives 2 threads; at least 1)."""
    cpus = max(1, affinity())
    limit = cgroup_cpu_limit(root, self_cgroup)
    if limit is not None:
        cpus = min(cpus, max(1, math.ceil(limit - 1e-9)))
    return cpus


def choose_threads(requested: int, cpus: int | None = None) -> int:
    """The intra-op thread count: ``requested`` when positive (``UNMASK_NUM_THREADS``), else the
    available CPUs."""
    if requested > 0:
        return requested
    return cpus if cpus is not None else available_cpus()


def prepare_openmp_environment(
    environ: MutableMapping[str, str] | None = None,
    *,
    num_threads: int,
    wait_policy: str,
) -> dict[str, str]:
    """Set ``OMP_WAIT_POLICY`` and ``OMP_NUM_THREADS`` defaults before the OpenMP runtime loads.

    ``num_threads``: 0 = :func:`available_cpus`; ``wait_policy``: a key of
    :data:`WAIT_POLICIES` or ``unset``. Variables already set (by the user) are kept. Returns
    what was set. Child processes (Celery pool processes, the demo's workers) inherit them.
    Called after torch was imported it still sets the variables (for children) but logs that
    this process keeps its runtime's wait policy. Entry points call it through
    :func:`services.settings.prepare_thread_environment` (the ``UNMASK_`` settings).
    """
    env = os.environ if environ is None else environ
    wanted: dict[str, str] = {"OMP_NUM_THREADS": str(choose_threads(num_threads))}
    if wait_policy in WAIT_POLICIES:
        wanted["OMP_WAIT_POLICY"] = WAIT_POLICIES[wait_policy]
    set_now = {key: value for key, value in wanted.items() if key not in env}
    env.update(set_now)
    if environ is None and "OMP_WAIT_POLICY" in set_now and "torch" in sys.modules:
        log.info("torch was imported before OMP_WAIT_POLICY was set: this process keeps spinning")
    return set_now
