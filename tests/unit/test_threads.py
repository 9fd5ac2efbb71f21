"""Thread selection: CPUs really available (affinity, cgroup v1/v2 quotas) and OpenMP's wait
policy set before torch loads in every entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.settings import Settings, apply_thread_settings
from services.threads import (
    available_cpus,
    cgroup_cpu_limit,
    choose_threads,
    parse_cfs_quota,
    parse_cpu_max,
    prepare_openmp_environment,
)

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="ascii")


def _v2_tree(
    tmp_path: Path, cpu_max: str, *, parent_cpu_max: str | None = None
) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    _write(root / "system.slice" / "job.scope" / "cpu.max", cpu_max)
    if parent_cpu_max is not None:
        _write(root / "system.slice" / "cpu.max", parent_cpu_max)
    self_cgroup = tmp_path / "self_cgroup"
    _write(self_cgroup, "0::/system.slice/job.scope")
    return root, self_cgroup


def test_parse_cpu_max_and_cfs_quota() -> None:
    assert parse_cpu_max("150000 100000") == 1.5
    assert parse_cpu_max("max 100000") is None
    assert parse_cpu_max("50000") == 0.5  # the period defaults to 100 ms
    assert parse_cpu_max("garbage here") is None
    assert parse_cfs_quota("200000", "100000") == 2.0
    assert parse_cfs_quota("-1", "100000") is None
    assert parse_cfs_quota("x", "100000") is None


def test_cgroup_v2_quota_of_own_group_and_the_tighter_parent(tmp_path: Path) -> None:
    root, self_cgroup = _v2_tree(tmp_path, "300000 100000")
    assert cgroup_cpu_limit(root, self_cgroup) == 3.0
    root, self_cgroup = _v2_tree(tmp_path / "b", "max 100000", parent_cpu_max="150000 100000")
    assert cgroup_cpu_limit(root, self_cgroup) == 1.5


def test_cgroup_v1_cfs_quota_and_no_limit(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    _write(root / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_quota_us", "100000")
    _write(root / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_period_us", "100000")
    self_cgroup = tmp_path / "self_cgroup"
    _write(self_cgroup, "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/")
    assert cgroup_cpu_limit(root, self_cgroup) == 1.0
    _write(root / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_quota_us", "-1")
    assert cgroup_cpu_limit(root, self_cgroup) is None
    assert cgroup_cpu_limit(tmp_path / "missing", tmp_path / "missing_self") is None


def test_available_cpus_is_affinity_capped_by_the_quota_rounded_up(tmp_path: Path) -> None:
    root, self_cgroup = _v2_tree(tmp_path, "150000 100000")
    assert available_cpus(affinity=lambda: 8, root=root, self_cgroup=self_cgroup) == 2
    assert available_cpus(affinity=lambda: 1, root=root, self_cgroup=self_cgroup) == 1
    root, self_cgroup = _v2_tree(tmp_path / "b", "20000 100000")  # 0.2 CPU: still one thread
    assert available_cpus(affinity=lambda: 4, root=root, self_cgroup=self_cgroup) == 1
    nothing = tmp_path / "none"
    assert available_cpus(affinity=lambda: 3, root=nothing, self_cgroup=nothing) == 3
    if hasattr(os, "sched_getaffinity"):
        assert available_cpus(root=nothing, self_cgroup=nothing) == len(os.sched_getaffinity(0))


def test_choose_threads_prefers_the_setting() -> None:
    assert choose_threads(3, cpus=2) == 3
    assert choose_threads(0, cpus=2) == 2


def test_prepare_sets_defaults_and_keeps_what_the_user_set() -> None:
    env: dict[str, str] = {}
    assert prepare_openmp_environment(env, num_threads=0, wait_policy="passive") == env
    assert env["OMP_WAIT_POLICY"] == "PASSIVE" and int(env["OMP_NUM_THREADS"]) >= 1
    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    prepare_openmp_environment(env, num_threads=1, wait_policy="passive")
    assert env == {"OMP_WAIT_POLICY": "ACTIVE", "OMP_NUM_THREADS": "1"}
    env = {}
    prepare_openmp_environment(env, num_threads=2, wait_policy="unset")
    assert env == {"OMP_NUM_THREADS": "2"}


def test_bad_wait_policy_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="omp_wait_policy"):
        Settings(omp_wait_policy="spin")


@pytest.mark.parametrize("package", ["cli", "workers", "api"])
def test_entry_points_set_the_wait_policy_before_torch_loads(package: str) -> None:
    code = (
        f"import sys, os; import {package}; "
        "print('torch' in sys.modules, os.environ.get('OMP_WAIT_POLICY'), "
        "os.environ.get('OMP_NUM_THREADS'))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UNMASK_", "OMP_", "GOMP_"))}
    env.update({"PYTHONPATH": str(ROOT), "UNMASK_NUM_THREADS": "1"})
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT
    )
    assert out.stdout.split() == ["False", "PASSIVE", "1"]


def test_apply_thread_settings_zero_means_the_available_cpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    import services.threads

    before = torch.get_num_threads()
    monkeypatch.setattr(services.threads, "available_cpus", lambda: 1)
    try:
        torch.set_num_threads(2)
        assert apply_thread_settings(Settings(num_threads=0)) == 1
        assert torch.get_num_threads() == 1
        assert apply_thread_settings(Settings(num_threads=2)) == 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
