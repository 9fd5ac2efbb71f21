"""docker-compose.yml agrees with the code: services, images, env, volumes, health, GPU, queues."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.platform.jobs.phase_queues import PHASE_QUEUES, QUEUES
from services.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
REQUIRED_SERVICES = {
    "api",
    "worker-gpu",
    "worker-cpu",
    "postgres",
    "redis",
    "minio",
    "create-bucket",
    "migrate",
}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def _services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = compose["services"]
    return services


def _command(service: dict[str, Any], dockerfile_cmd: list[str] | None = None) -> list[str]:
    command = service.get("command", dockerfile_cmd)
    assert isinstance(command, list), "commands are exec-form lists"
    return [str(part) for part in command]


def _defaults(part: str) -> str:
    """``part`` with each ``${VAR:-default}`` replaced by its default (the file as shipped)."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", part)


def test_every_platform_service_is_defined(compose: dict[str, Any]) -> None:
    assert set(_services(compose)) >= REQUIRED_SERVICES


def test_images_are_pinned_and_builds_name_existing_dockerfiles(compose: dict[str, Any]) -> None:
    for name, service in _services(compose).items():
        if "build" in service:
            dockerfile = (
                ROOT / service["build"].get("context", ".") / service["build"]["dockerfile"]
            )
            assert dockerfile.is_file(), f"{name}: {dockerfile} is missing"
        else:
            image = service["image"]
            assert ":" in image and not image.endswith(":latest"), f"{name}: pin {image}"


def test_env_names_are_settings_fields(compose: dict[str, Any]) -> None:
    fields = {f"UNMASK_{name.upper()}" for name in Settings.model_fields}
    for name in ("api", "worker-gpu", "worker-cpu", "migrate"):
        env = _services(compose)[name]["environment"]
        unknown = {key for key in env if key.startswith("UNMASK_")} - fields
        assert not unknown, f"{name}: {unknown} are not Settings fields"
        assert env["UNMASK_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert env["UNMASK_BROKER_URL"].startswith("redis://")
        assert env["UNMASK_BLOB_BACKEND"] == "s3"
        assert "UNMASK_TOKEN_HMAC_KEY" in env


def test_state_lives_in_named_volumes(compose: dict[str, Any]) -> None:
    services = _services(compose)
    declared = set(compose["volumes"])
    for name, path in (("postgres", "/var/lib/postgresql/data"), ("redis", "/data")):
        mounts = services[name]["volumes"]
        assert any(m.split(":")[1] == path and m.split(":")[0] in declared for m in mounts)
    assert any(m.endswith(":/data") for m in services["minio"]["volumes"])
    for service in services.values():
        for mount in service.get("volumes", []):
            source = mount.split(":")[0]
            assert source in declared, f"volume {source} is not declared"


def test_long_running_services_have_healthchecks(compose: dict[str, Any]) -> None:
    services = _services(compose)
    for name in ("postgres", "redis", "minio", "api", "worker-gpu", "worker-cpu"):
        check = services[name]["healthcheck"]["test"]
        assert check[0] in ("CMD", "CMD-SHELL"), name
    assert "/v1/health" in " ".join(services["api"]["healthcheck"]["test"])


def test_startup_order_waits_for_migrations_and_healthy_dependencies(
    compose: dict[str, Any],
) -> None:
    services = _services(compose)
    for name in ("api", "worker-gpu", "worker-cpu"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"
        assert depends["redis"]["condition"] == "service_healthy"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["create-bucket"]["depends_on"]["minio"]["condition"] == "service_healthy"
    assert _command(services["migrate"]) == ["alembic", "upgrade", "head"]


def test_gpu_worker_reserves_an_nvidia_gpu(compose: dict[str, Any]) -> None:
    devices = _services(compose)["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    assert "deploy" not in _services(compose)["worker-cpu"]


def _queues_of(command: list[str]) -> set[str]:
    assert command[:4] == ["celery", "-A", "workers.app", "worker"]
    return set(_defaults(command[command.index("-Q") + 1]).split(","))


def test_worker_commands_name_the_queues_the_app_defines(compose: dict[str, Any]) -> None:
    from workers.app import app
    from workers.names import QUEUE_REAPER

    defined = {queue.name for queue in app.conf.task_queues}
    assert defined == set(QUEUES) | {QUEUE_REAPER}
    assert set(QUEUES) == set(PHASE_QUEUES.values()) and QUEUE_REAPER not in QUEUES
    services = _services(compose)
    gpu = _command(services["worker-gpu"])
    cpu = _command(services["worker-cpu"])
    reaper = _command(services["worker-reaper"])
    assert _queues_of(gpu) == {"gpu"} and _queues_of(cpu) == {"cpu"}
    # The reaper's worker runs nothing else, so long phases never hold up a sweep.
    assert _queues_of(reaper) == {QUEUE_REAPER}
    assert _queues_of(gpu) | _queues_of(cpu) | _queues_of(reaper) == defined
    # One GPU task at a time per worker, and no prefetched second task.
    assert gpu[gpu.index("--concurrency") + 1] == "1"
    assert gpu[gpu.index("--prefetch-multiplier") + 1] == "1"
    # The healthchecks ping the node names the commands give.
    for name, command in (("worker-gpu", gpu), ("worker-cpu", cpu), ("worker-reaper", reaper)):
        node = command[command.index("-n") + 1].split("@")[0]
        check = " ".join(services[name]["healthcheck"]["test"])
        assert re.search(rf"-d {node}@", check), name


def test_a_beat_service_schedules_the_reaper(compose: dict[str, Any]) -> None:
    from workers.app import app
    from workers.names import TASK_REAP

    beats = [s for s in _services(compose).values() if s.get("command", [])[3:4] == ["beat"]]
    assert len(beats) == 1, "exactly one celery beat"
    from workers.names import QUEUE_REAPER

    schedule = app.conf.beat_schedule
    reaps = [entry for entry in schedule.values() if entry["task"] == TASK_REAP]
    assert len(reaps) == 1 and reaps[0]["options"]["queue"] == QUEUE_REAPER
    assert app.amqp.router.route({}, TASK_REAP)["queue"].name == QUEUE_REAPER


def test_deploy_doc_lists_every_setting() -> None:
    text = (ROOT / "docs" / "deploy.md").read_text()
    missing = [n for n in Settings.model_fields if f"`UNMASK_{n.upper()}`" not in text]
    assert not missing, f"docs/deploy.md lacks {missing}"


def test_bucket_aborts_incomplete_multipart_uploads(compose: dict[str, Any]) -> None:
    """The create-bucket one-shot imports an AbortIncompleteMultipartUpload rule, and MinIO (which
    drops that action) gets its own stale-upload expiry."""
    import json

    services = _services(compose)
    one_shot = services["create-bucket"]
    assert "mc ilm rule import local/unmask" in " ".join(one_shot["command"])
    rules = json.loads(one_shot["environment"]["BUCKET_LIFECYCLE_JSON"])["Rules"]
    abort = [r for r in rules if "AbortIncompleteMultipartUpload" in r]
    assert abort and abort[0]["Status"] == "Enabled"
    assert abort[0]["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] >= 1
    assert services["minio"]["environment"]["MINIO_API_STALE_UPLOADS_EXPIRY"]
