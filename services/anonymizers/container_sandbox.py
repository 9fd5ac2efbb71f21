"""The container sandbox's parts before any run: the errors of a run, the sandbox's limits and
engine (``ContainerSandbox``, ``engine_client``), and image references (the operator's registry
allowlist, pinning by digest, pulling). ``services.anonymizers.container`` runs images with them;
import these names from here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.anonymizers.contract import (
    exception_line,
)
from services.errors import InvalidInputError
from services.settings import Settings

# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class ContainerError(InvalidInputError):
    """The anonymizer image broke the contract or a sandbox limit; ``log_tail`` has its logs."""

    def __init__(self, message: str, *, log_tail: str = "", exit_code: int | None = None) -> None:
        shown = log_tail[-2000:].strip()
        super().__init__(message + (f"\n--- container log (tail) ---\n{shown}" if shown else ""))
        self.summary = message
        self.log_tail = log_tail
        self.exit_code = exit_code


class ImageNotFoundError(ContainerError):
    """The image reference does not exist locally and could not be pulled."""


class ContainerExitError(ContainerError):
    """The container exited with a non-zero code (other than a kill)."""


class ContainerTimeoutError(ContainerError):
    """The container ran past its wall-clock limit and was killed."""


class ContainerMemoryError(ContainerError):
    """The container was killed for exceeding its memory limit (exit code 137)."""


class ContainerOutputError(ContainerError):
    """The output folder breaks the contract (missing, extra or malformed files)."""


class MissingOutputError(ContainerOutputError):
    """Some utterance of the job has no output file."""


class ExtraOutputError(ContainerOutputError):
    """The output folder holds something besides the expected files (file, folder, link)."""


class OutputFormatError(ContainerOutputError):
    """An output is not decodable 16 kHz mono audio of the right duration, or bad metadata."""


class ContainerStartError(ContainerError):
    """The engine refused to start the image (e.g. its entrypoint does not exist)."""


class ImageRegistryError(InvalidInputError):
    """The image reference names a registry outside the operator's allowlist."""


class ContainerEngineError(RuntimeError):
    """The container engine cannot be reached or failed: infrastructure, not the maker's fault.

    Transient for the job runner (retried with backoff). ``str()`` has the details for the
    operator (engine address, cause); ``public_message`` is what a user may see.
    """

    public_message = "the container engine is unavailable"


# --------------------------------------------------------------------------------------------
# Limits and the engine
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits: memory (MiB, no swap), CPUs (cores), pids, wall clock (seconds), tmpfs
    ``/tmp`` (MiB), ``/dev/shm`` (MiB), the log tail kept (bytes), the uid:gid the container runs
    as, and utterances per run (``shard_size``)."""

    memory_mb: int = 4096
    cpus: float = 2.0
    pids_limit: int = 256
    time_limit_s: float = 1800.0
    tmpfs_mb: int = 512
    shm_mb: int = 64
    log_bytes: int = 65536
    user: str = "65534:65534"
    shard_size: int = 64

    @classmethod
    def from_settings(cls, settings: Settings) -> SandboxLimits:
        """The limits configured in ``settings`` (``UNMASK_CONTAINER_*``)."""
        return cls(
            memory_mb=settings.container_memory_mb,
            cpus=settings.container_cpus,
            pids_limit=settings.container_pids_limit,
            time_limit_s=settings.container_time_limit_s,
            tmpfs_mb=settings.container_tmpfs_mb,
            shm_mb=settings.container_shm_mb,
            log_bytes=settings.container_log_bytes,
            user=settings.container_user,
            shard_size=settings.container_shard_size,
        )


@dataclass(frozen=True)
class ContainerSandbox:
    """Where and how anonymizer containers run: the engine's URL (empty or None = ``DOCKER_HOST``
    or the Docker default), whether an image missing locally is pulled, the per-run limits."""

    engine_url: str | None = None
    pull: bool = True
    limits: SandboxLimits = SandboxLimits()
    registries: tuple[str, ...] | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> ContainerSandbox:
        """The sandbox configured in ``settings`` (``UNMASK_CONTAINER_*``)."""
        return cls(
            engine_url=settings.container_engine_url,
            pull=settings.container_pull,
            limits=SandboxLimits.from_settings(settings),
            registries=tuple(settings.container_registries),
        )

    def anonymizer_options(self) -> dict[str, Any]:
        """Keyword arguments of `ContainerAnonymizer` for this sandbox."""
        return {
            "engine_url": self.engine_url,
            "pull": self.pull,
            "limits": self.limits,
            "registries": self.registries,
        }


def engine_client(url: str | None = None) -> Any:
    """A ``docker.DockerClient`` for ``url`` (empty or None: ``DOCKER_HOST``, then the Docker
    default socket). Raises `ContainerEngineError` when the engine does not answer."""
    import docker

    try:
        client = docker.DockerClient(base_url=url, timeout=120) if url else docker.from_env()
        client.ping()
    except Exception as exc:  # DockerException, requests errors: the engine is not there
        where = url or os.environ.get("DOCKER_HOST", "the default Docker socket")
        raise ContainerEngineError(
            f"container engine at {where} does not answer ({exception_line(exc)}); start it, e.g. "
            "`bash scripts/ensure_podman.sh` (Podman) and set UNMASK_CONTAINER_ENGINE_URL"
        ) from exc
    return client


DEFAULT_REGISTRY = "docker.io"


def image_registry(ref: str) -> str:
    """The registry ``host[:port]`` a reference pulls from (Docker's rule: the first path
    component when it has a ``.`` or ``:`` or is ``localhost``, else ``docker.io``)."""
    name = ref.split("@", 1)[0]
    first, sep, _ = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        host = first.lower()
        return DEFAULT_REGISTRY if host in ("index.docker.io", "registry-1.docker.io") else host
    return DEFAULT_REGISTRY


_COMPONENT = r"[a-z0-9]+(?:[._-][a-z0-9]+)*"
_TAG_AND_DIGEST = r"(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?@sha256:[0-9a-f]{64}"
_DOCKER_HUB_NAMES = ("docker.io", "index.docker.io", "registry-1.docker.io")


def allowed_image_pattern(allowed: Sequence[str]) -> str:
    """The regular expression of the pinned image references (``PINNED_IMAGE_RE`` of
    ``services.anonymizers.kinds.container``) whose registry (:func:`image_registry`) is one of
    ``allowed``: what an API document states of a container submission's ``image``."""
    hosts = sorted({a.strip().lower() for a in allowed})
    host_re = re.compile(rf"^{_COMPONENT}(?::[0-9]+)?$")
    named = [h for h in hosts if host_re.match(h) and ("." in h or ":" in h or h == "localhost")]
    if DEFAULT_REGISTRY in hosts:
        named = sorted({*named, *_DOCKER_HUB_NAMES})
    path = rf"{_COMPONENT}(?:/{_COMPONENT})*"
    # Host names hold [a-z0-9._:-] only (host_re): '.' is the one character to escape, and
    # escaping nothing else keeps the pattern valid ECMA-262 (JSON Schema's dialect).
    escaped = [h.replace(".", r"\.") for h in named]
    branches = [rf"(?:{'|'.join(escaped)})/{path}"] if named else []
    if DEFAULT_REGISTRY in hosts:
        # No registry named: one component (a port-like suffix reads as in PINNED_IMAGE_RE), or
        # a first component without '.' or ':' that is not localhost.
        branches.append(rf"{_COMPONENT}(?::[0-9]+)?")
        branches.append(rf"(?!localhost/)[a-z0-9]+(?:[_-][a-z0-9]+)*/{path}")
    if not branches:
        return r"^(?!)$"  # no registry allowed: no container submission
    return rf"^(?:{'|'.join(branches)}){_TAG_AND_DIGEST}$"


def check_image_registry(ref: str, allowed: Sequence[str]) -> None:
    """Raise `ImageRegistryError` unless ``ref``'s registry is one of ``allowed``.

    Pulling makes the worker contact that host: an allowlist keeps it from being pointed at
    internal addresses (``10.0.0.5:5000/x@sha256:...``).
    """
    registry = image_registry(ref)
    if registry not in {a.strip().lower() for a in allowed}:
        shown = ", ".join(allowed) if allowed else "none (container submissions are disabled)"
        raise ImageRegistryError(
            f"image {ref!r}: registry {registry!r} is not allowed; allowed registries: {shown}"
        )


def is_pinned(ref: str) -> bool:
    """Whether ``ref`` names an immutable image: ``name@sha256:<64 hex>`` or ``sha256:<id>``."""
    digest = ref.rsplit("@", 1)[1] if "@" in ref else ref
    if not digest.startswith("sha256:"):
        return False
    hexpart = digest[len("sha256:") :]
    return len(hexpart) == 64 and all(c in "0123456789abcdef" for c in hexpart)


def _repository(ref: str) -> str:
    """``registry/name`` of a reference, without tag or digest."""
    name = ref.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    return name


def _same_repository(a: str, b: str) -> bool:
    def norm(r: str) -> str:
        for prefix in ("docker.io/library/", "docker.io/", "index.docker.io/library/"):
            if r.startswith(prefix):
                return r[len(prefix) :]
        return r

    return norm(a) == norm(b) or norm(a).endswith("/" + norm(b)) or norm(b).endswith("/" + norm(a))


def resolve_image_digest(
    ref: str, *, client: Any, pull: bool, registries: Sequence[str] | None = None
) -> str:
    """Pin ``ref`` to an immutable reference, ``name@sha256:...`` (done at submission time).

    The image is looked up locally through ``client`` (`engine_client`), else pulled when
    ``pull``.
    Images with a registry digest give ``repository@sha256:<manifest digest>``; images that never
    came from a registry (built locally on Docker) give their content-addressed id
    ``sha256:<id>``. Both keep naming the same bytes when the tag moves. Raises
    `ImageNotFoundError` when the image cannot be found or pulled.
    """
    if not ref or any(c.isspace() for c in ref):
        raise ImageNotFoundError(f"invalid image reference {ref!r}")
    image = _get_or_pull(client, ref, pull, registries)
    if is_pinned(ref):
        if "@" in ref:
            return f"{_repository(ref)}@{ref.rsplit('@', 1)[1]}"
        return str(image.id)
    digests = [str(d) for d in (image.attrs.get("RepoDigests") or [])]
    repo = _repository(ref)
    for d in digests:
        if _same_repository(d.split("@", 1)[0], repo):
            return f"{repo}@{d.split('@', 1)[1]}"
    if digests:
        return digests[0]
    return str(image.id)


def _get_or_pull(client: Any, ref: str, pull: bool, registries: Sequence[str] | None = None) -> Any:
    """The local image ``ref``, else pulled when ``pull`` (only from ``registries``; None = any)."""
    import docker

    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.APIError as exc:
        raise ImageNotFoundError(f"image {ref!r}: lookup failed ({exception_line(exc)})") from exc
    if not pull:
        raise ImageNotFoundError(f"image {ref!r} not found locally (pulling is disabled)")
    if registries is not None:
        check_image_registry(ref, registries)
    try:
        return client.images.pull(ref)
    except docker.errors.APIError as exc:
        raise ImageNotFoundError(
            f"image {ref!r} not found and not pullable ({exception_line(exc)})"
        ) from exc
