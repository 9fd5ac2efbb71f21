"""The images and the deployment check's compose files, read as files (the real build and stack:
`make deploy-check`, docs/deploy.md)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from services.platform.jobs.phase_queues import QUEUES

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "deploy" / "Dockerfile").read_text()
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
CHECK_OVERRIDE: dict[str, Any] = yaml.safe_load(
    (ROOT / "deploy" / "check" / "compose.check.yml").read_text()
)


@pytest.fixture(scope="module")
def deploy_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deploy_check", ROOT / "scripts/deploy_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["deploy_check"] = module
    spec.loader.exec_module(module)
    return module


def _instructions(name: str) -> list[str]:
    return [line for line in DOCKERFILE.splitlines() if line.startswith(f"{name} ")]


def test_the_base_image_is_a_build_argument_defaulting_to_the_official_python() -> None:
    lines = DOCKERFILE.splitlines()
    arg = lines.index("ARG BASE_IMAGE=python:3.11-slim-bookworm")
    assert lines.index("FROM ${BASE_IMAGE}") > arg


def test_the_image_runs_as_a_non_root_user_with_a_health_check() -> None:
    users = _instructions("USER")
    assert users and all(u.split()[1] not in ("root", "0") for u in users)
    assert "useradd" in DOCKERFILE
    (check,) = [line for line in DOCKERFILE.splitlines() if "CMD [" in line and "urlopen" in line]
    assert "/v1/health/ready" in check
    assert any(line.startswith("HEALTHCHECK ") for line in DOCKERFILE.splitlines())


def test_installs_are_pinned_by_the_constraints() -> None:
    installs = re.findall(r"pip install [^\n\\]*(?:\\\n[^\n\\]*)*", DOCKERFILE)
    assert installs
    for install in installs:
        assert "-c constraints.txt" in install or "--no-deps" in install, install


def test_the_image_copies_code_but_no_tests_caches_or_venv() -> None:
    sources = {part for line in _instructions("COPY") for part in line.split()[1:-1]}
    assert sources <= {
        "pyproject.toml", "constraints.txt", "README.md", "services", "api", "workers", "cli",
        "unmask_client", "migrations", "alembic.ini",
    }  # fmt: skip
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".venv", "tests", ".git", "**/__pycache__", ".pytest_cache"} <= ignored


def test_every_built_service_uses_the_one_dockerfile_and_the_gpu_worker_a_cuda_base() -> None:
    services = COMPOSE["services"]
    built = {name: s for name, s in services.items() if "build" in s}
    assert set(built) >= {"api", "migrate", "worker-cpu", "worker-gpu", "worker-reaper", "beat"}
    assert {s["build"]["dockerfile"] for s in built.values()} == {"deploy/Dockerfile"}
    gpu_args = services["worker-gpu"]["build"]["args"]
    assert gpu_args["BASE_IMAGE"].startswith("nvidia/cuda:") and gpu_args["UNMASK_DEVICE"] == "cuda"
    assert services["worker-cpu"]["environment"]["UNMASK_DEVICE"] == "cpu"
    # The GPU worker's image is its own (another base); the CPU services share one.
    cpu_images = {s["image"] for name, s in built.items() if name != "worker-gpu"}
    assert len(cpu_images) == 1 and services["worker-gpu"]["image"] not in cpu_images


def test_without_a_gpu_the_cpu_worker_can_take_every_phase_queue() -> None:
    command = COMPOSE["services"]["worker-cpu"]["command"]
    queues = command[command.index("-Q") + 1]
    variable = re.fullmatch(r"\$\{(UNMASK_CPU_WORKER_QUEUES):-cpu\}", queues)
    assert variable, queues
    docs = (ROOT / "docs" / "deploy.md").read_text()
    assert f"{variable.group(1)}=cpu,gpu" in docs
    assert set("cpu,gpu".split(",")) == set(QUEUES)


def test_the_check_override_swaps_only_the_third_party_services() -> None:
    """Nothing else differs from the file operators use: the images (and the S3 stand-in's
    command and health check) of PostgreSQL, Redis, MinIO and its bucket job."""
    services = CHECK_OVERRIDE["services"]
    assert set(services) == {"postgres", "redis", "minio", "create-bucket"}
    assert set(CHECK_OVERRIDE) == {"services"}
    for name, service in services.items():
        assert set(service) <= {"image", "command", "entrypoint", "healthcheck"}, name
        assert service["image"].startswith("localhost/unmask-check-"), name


def test_compose_files_merge_as_the_compose_specification_says(deploy_check: ModuleType) -> None:
    base = {"services": {"a": {"command": ["x", "y"], "environment": {"A": "1", "B": "2"}}}}
    override = {"services": {"a": {"command": ["z"], "environment": {"B": "3"}}, "b": {}}}
    merged = deploy_check.merge_compose(base, override)
    assert merged["services"]["a"] == {"command": ["z"], "environment": {"A": "1", "B": "3"}}
    assert merged["services"]["b"] == {}
    assert base["services"]["a"]["command"] == ["x", "y"]  # inputs untouched


def test_the_check_merges_the_override_into_docker_compose(deploy_check: ModuleType) -> None:
    merged = deploy_check.merge_compose(COMPOSE, CHECK_OVERRIDE)
    services = merged["services"]
    assert services["minio"]["command"] == ["python3", "/opt/s3_server.py"]
    assert services["minio"]["volumes"] == COMPOSE["services"]["minio"]["volumes"]
    assert services["api"] == COMPOSE["services"]["api"]
    assert "mc" not in " ".join(services["create-bucket"]["command"])


def test_result_rows_compare_by_key_and_exact_value(deploy_check: ModuleType) -> None:
    row = {"scenario": "original", "backend": "cosine", "seed": 0, "metric": "eer_percent"}
    same = deploy_check.compare_rows([{**row, "value": 12.5}], [{**row, "value": 12.5}])
    assert same == []
    differ = deploy_check.compare_rows([{**row, "value": 12.5}], [{**row, "value": 12.6}])
    assert len(differ) == 1 and "12.5 != 12.6" in differ[0]
    nan = float("nan")
    assert deploy_check.compare_rows([{**row, "value": nan}], [{**row, "value": nan}]) == []
    missing = deploy_check.compare_rows([{**row, "value": 1.0}], [])
    assert missing and "only in the stack" in missing[0]


def test_the_walk_through_protocol_is_a_valid_protocol_config() -> None:
    """deploy/check/tiny-protocol.json: what the check and docs/deploy.md's walk-through post."""
    import json

    from services.platform.jobs.config import validate_protocol_config

    body = json.loads((ROOT / "deploy" / "check" / "tiny-protocol.json").read_text())
    assert set(body) == {"name", "config"}
    validate_protocol_config(body["config"])
    assert "tiny-protocol.json" in (ROOT / "docs" / "deploy.md").read_text()
