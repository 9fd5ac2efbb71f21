"""Container engine faults are transient and never shown with their socket path; image
registries are checked against the operator's allowlist (issue 17, item 10)."""

from __future__ import annotations

import pytest

from services.anonymizers.container_sandbox import (
    ContainerEngineError,
    ImageRegistryError,
    check_image_registry,
    engine_client,
    image_registry,
)
from services.errors import InvalidInputError
from services.platform.jobs.host import JobServices, transient_summary
from services.settings import Settings

SOCKET = "unix:///run/nothing-listens-here.sock"


def test_an_unreachable_engine_is_a_transient_error_with_a_public_summary() -> None:
    with pytest.raises(ContainerEngineError) as info:
        engine_client(SOCKET)
    services = JobServices(database=None, store=None, settings=Settings())  # type: ignore[arg-type]
    assert services.is_transient(info.value)
    try:  # as the pipeline raises it: wrapped by whatever ran the anonymizer
        raise RuntimeError("anonymize failed") from info.value
    except RuntimeError as wrapped:
        assert services.is_transient(wrapped)
        summary = transient_summary(wrapped)
    assert "nothing-listens-here" in str(info.value)  # the operator's log keeps the details
    assert summary == ContainerEngineError.public_message
    assert "/run/" not in summary and "Error" not in summary


def test_storage_errors_are_summarised_without_their_exception_type() -> None:
    summary = transient_summary(ConnectionRefusedError("http://10.1.2.3:9000 refused"))
    assert "10.1.2.3" not in summary and "ConnectionRefusedError" not in summary


@pytest.mark.parametrize(
    ("ref", "registry"),
    [
        ("lab/anon@sha256:" + "a" * 64, "docker.io"),
        ("anon:1", "docker.io"),
        ("index.docker.io/lab/anon:1", "docker.io"),
        ("ghcr.io/lab/anon:v1@sha256:" + "a" * 64, "ghcr.io"),
        ("10.0.0.5:5000/x@sha256:" + "a" * 64, "10.0.0.5:5000"),
        ("localhost/x", "localhost"),
        ("Registry.Example.org/x/y/z:1", "registry.example.org"),
    ],
)
def test_image_registry_follows_dockers_rule(ref: str, registry: str) -> None:
    assert image_registry(ref) == registry


def test_registries_outside_the_allowlist_are_refused() -> None:
    allowed = Settings().container_registries
    check_image_registry("ghcr.io/lab/anon@sha256:" + "a" * 64, allowed)
    check_image_registry("lab/anon@sha256:" + "a" * 64, allowed)
    for ref in ("10.0.0.5:5000/x@sha256:" + "a" * 64, "localhost:5000/x:1", "localhost/x"):
        with pytest.raises(ImageRegistryError, match="not allowed") as info:
            check_image_registry(ref, allowed)
        assert isinstance(info.value, InvalidInputError)
    with pytest.raises(ImageRegistryError, match="disabled"):
        check_image_registry("ghcr.io/lab/anon:1", [])
