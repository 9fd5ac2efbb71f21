"""Kind ``container``: an OCI image pinned by digest, run in the sandbox per shard.

The contract the image follows is ``services.anonymizers.contract`` (docs/container-contract.md);
the runner and the sandbox are ``services.anonymizers.container``. The API accepts images from the
operator's registries only (``UNMASK_CONTAINER_REGISTRIES``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.anonymizers.kinds.base import AnonymizerKind, KindConfig, RunnerContext
from services.settings import DEPLOYMENT_RULE

if TYPE_CHECKING:
    from services.anonymizers.base import Anonymizer
    from services.settings import Settings

KIND = "container"

# name[:tag]@sha256:<64 hex>: a tag alone can be re-pointed to other code, a digest cannot.
PINNED_IMAGE_RE = re.compile(
    r"^(?P<name>[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9._-]{0,127}))?"
    r"@(?P<digest>sha256:[0-9a-f]{64})$"
)
# The same rule for the OpenAPI document (no named groups: portable regex syntax).
PINNED_IMAGE_PATTERN = re.sub(r"\(\?P<\w+>", "(?:", PINNED_IMAGE_RE.pattern)
_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")


class ContainerAnonymizerConfig(KindConfig):
    """``container``: an OCI image reference pinned by digest, run in the sandbox
    (docs/container-contract.md)."""

    kind: Literal["container"] = Field(description="container: an OCI image.")
    image: str = Field(min_length=1, description="Image reference (name@sha256:...).")


class ContainerSpec(BaseModel):
    """An OCI image pinned by digest (run by the container runner)."""

    model_config = ConfigDict(extra="forbid")

    image: str = Field(
        # The stored name[:tag] (column submissions.container_image, 512 characters) plus
        # "@sha256:" and 64 hex digits (tests/unit/test_api_limits_match_storage.py checks it).
        max_length=512 + len("@sha256:") + 64,
        description="`name[:tag]@sha256:<64 hex>`; tags alone are refused (not reproducible). "
        "From the server's registries only (UNMASK_CONTAINER_REGISTRIES; the server's document "
        "states them in the pattern).",
        examples=["ghcr.io/lab/anon@sha256:" + "0" * 64],
        json_schema_extra={
            "pattern": PINNED_IMAGE_PATTERN,
            DEPLOYMENT_RULE: "container_registries",
        },
    )

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        if not PINNED_IMAGE_RE.match(value):
            raise ValueError(
                f"image {value!r} must be pinned by digest: name[:tag]@sha256:<64 hex digits>"
            )
        return value


class ContainerKind(AnonymizerKind):
    """The maker's code in an image; it runs when a job needs it."""

    name = KIND
    title = "Container"
    description = "an OCI image pinned by digest, run in the sandbox"
    config_model = ContainerAnonymizerConfig
    submission_field = "container"
    submission_model = ContainerSpec
    submission_doc = "Submit an anonymizer as a pinned container image."
    columns = ("container_image", "container_digest")
    content_fields = ("container_digest",)

    def submission_columns(self, spec: BaseModel, settings: Settings) -> dict[str, Any]:
        """The image's registry must be on the operator's allowlist (the worker pulls it)."""
        from services.anonymizers.container_sandbox import check_image_registry

        assert isinstance(spec, ContainerSpec)
        match = PINNED_IMAGE_RE.match(spec.image)
        assert match is not None  # checked by the model
        check_image_registry(spec.image, settings.container_registries)
        return {
            "container_image": spec.image.rsplit("@", 1)[0],
            "container_digest": match.group("digest"),
        }

    def normalize_columns(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        image, digest = columns.get("container_image"), columns.get("container_digest")
        if not image or not digest or not _DIGEST_RE.match(digest):
            raise ValueError(
                "kind container needs container_image and container_digest of the form "
                "sha256:<64 hex digits>"
            )
        return {"container_image": image, "container_digest": digest}

    def config_section(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        return {"kind": KIND, "image": _pinned_ref(columns)}

    def public_fields(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        return {"container_image": _pinned_ref(columns)}

    def check(self, config: Any, *, engine_url: str | None = None) -> list[str]:
        from services.anonymizers.container_sandbox import ContainerEngineError, engine_client

        problems: list[str] = []
        image = config.image
        if any(c.isspace() for c in image) or image.startswith(("-", "@", ":")):
            problems.append(f"anonymizer.image: invalid image reference {image!r}")
        try:
            engine_client(engine_url or None).close()
        except ContainerEngineError as exc:
            problems.append(f"anonymizer.kind container: {exc}")
        return problems

    def build(self, config: Any, ctx: RunnerContext) -> Anonymizer:
        """Pinned by digest if it is not yet; a GPU exactly when this host computes on one."""
        from services.anonymizers.container import ContainerAnonymizer

        return ContainerAnonymizer(config.image, gpu=ctx.gpu, **ctx.sandbox_options)


def _pinned_ref(columns: Mapping[str, Any]) -> str:
    return f"{columns['container_image']}@{columns['container_digest']}"
