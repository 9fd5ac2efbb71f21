"""Container engine faults are transient and never shown with their socket path; image
registries are checked against the operator's allowlist, and the API document states it."""

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


@pytest.mark.parametrize(
    "allowed",
    [["docker.io", "ghcr.io", "quay.io"], ["ghcr.io", "localhost:5000"], ["docker.io"], []],
)
def test_the_documented_image_pattern_accepts_exactly_what_the_server_accepts(
    allowed: list[str],
) -> None:
    """The API document states the allowed registries as the image's pattern
    (``allowed_image_pattern``): it matches a pinned reference exactly when the server's check
    passes, on references drawn from the pinned form and on Docker's edge cases."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from services.anonymizers.container_sandbox import allowed_image_pattern
    from services.anonymizers.kinds.container import PINNED_IMAGE_RE

    pattern = re.compile(allowed_image_pattern(allowed))

    def accepted(ref: str) -> bool:
        try:
            check_image_registry(ref, allowed)
        except ImageRegistryError:
            return False
        return True

    digest = "@sha256:" + "b" * 64
    edges = [
        "lab/anon", "anon", "anon:1.0", "a.b", "a:1:b", "localhost/x", "localhost", "x.io/y",
        "ghcr.io/lab/anon:v1", "localhost:5000/x", "index.docker.io/lab/x", "lab_x/y.z/w",
        "registry-1.docker.io/a", "quay.io/a/b/c", "a:80/b", "la.b/anon", "localhost_x/y",
    ]  # fmt: skip
    for name in edges:
        ref = name + digest
        assert PINNED_IMAGE_RE.match(ref), ref
        assert bool(pattern.match(ref)) == accepted(ref), (ref, allowed)

    @settings(max_examples=300, deadline=None, database=None)
    @given(st.from_regex(PINNED_IMAGE_RE, fullmatch=True))
    def agrees(ref: str) -> None:
        assert bool(pattern.match(ref)) == accepted(ref), (ref, allowed)

    agrees()
