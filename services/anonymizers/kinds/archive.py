"""Kind ``archive``: pre-anonymized audio of a protocol's utterances, uploaded as one archive.

The submission is made for one protocol (``protocol_id``) and stays pending until the workers
validated the archive against it (``services.platform.archives``); a job binds ``archive`` (the
blob key) to the local folder of the validated audio. In an evaluation config, ``archive`` is an
archive file or a folder (extracted, or in the VoicePrivacy layout), validated in an
``archive-check`` stage first. The validator and the runner are ``services.anonymizers.archive``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from services.anonymizers.kinds.base import AnonymizerKind, KindConfig, RunnerContext

if TYPE_CHECKING:
    from services.anonymizers.base import Anonymizer

KIND = "archive"

_SHA256_HEX_RE = re.compile(r"^[0-9a-f]{64}$")


class ArchiveAnonymizerConfig(KindConfig):
    """``archive``: pre-anonymized audio for the protocol (docs/anonymizers.md)."""

    kind: Literal["archive"] = Field(description="archive: pre-anonymized audio.")
    archive: Path = Field(
        description="The archive: an archive file, or a folder (extracted, or in the "
        "VoicePrivacy layout); on the platform the validated folder."
    )


class ArchiveKind(AnonymizerKind):
    """Pre-anonymized audio: the maker ran the anonymizer; the enrollment-leak check runs."""

    name = KIND
    title = "Archive"
    description = "pre-anonymized audio of a protocol, uploaded as an archive"
    config_model = ArchiveAnonymizerConfig
    columns = ("archive_blob_key", "archive_sha256", "archive_size_bytes", "protocol_id")
    content_fields = ("archive_sha256",)
    pre_anonymized = True

    def normalize_columns(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        from services.storage.blob_interface import validate_key

        key, sha256 = columns.get("archive_blob_key"), columns.get("archive_sha256")
        if not key or not sha256 or not _SHA256_HEX_RE.match(sha256):
            raise ValueError(
                "kind archive needs archive_blob_key and archive_sha256 (64 lowercase hex digits)"
            )
        validate_key(key)
        return {c: columns.get(c) for c in self.columns}

    def config_section(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        return {"kind": KIND, "archive": columns["archive_blob_key"]}

    def public_fields(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "archive_sha256": columns.get("archive_sha256"),
            "archive_protocol_id": columns.get("protocol_id"),
        }

    def check(self, config: Any, *, engine_url: str | None = None) -> list[str]:
        archive = config.archive
        if not (archive.is_dir() or archive.is_file()):
            return [
                f"anonymizer.archive: {archive} not found (an archive file, or a folder: "
                "extracted, or in the VoicePrivacy layout)"
            ]
        return []

    def build(self, config: Any, ctx: RunnerContext) -> Anonymizer:
        from services.anonymizers.archive import ArchiveAnonymizer

        return ArchiveAnonymizer(validated_archive(ctx, config.archive))


def validated_archive(ctx: RunnerContext, source: Path) -> Path:
    """The validated folder of a pre-anonymized submission given as ``source``.

    A folder already validated (it holds ``validation.json``, the platform's extracted
    archives) is used as it is. A raw archive file or a local folder (for instance a
    VoicePrivacy ``data/`` folder with ``<set><suffix>/wav/<utt>.wav``) is validated against the
    protocol in an ``archive-check`` stage keyed by its content; a problem raises
    ``ArchiveError``.
    """
    from services.anonymizers.archive import (
        REPORT_NAME,
        ArchiveLimits,
        expected_from_protocol,
        source_fingerprint,
        validate_archive,
        vpc_folders_of,
    )

    if (source / REPORT_NAME).is_file():
        return source
    inputs = {
        "protocol": ctx.protocol_key,
        "source": str(source.resolve()),
        "content": source_fingerprint(source),
    }

    def make(folder: Path) -> dict[str, Any]:
        ctx.progress(0.0, f"validating {source.name}")
        report = validate_archive(
            source,
            expected_from_protocol(ctx.protocol),
            folder,
            ArchiveLimits.from_settings(ctx.settings),
            {u.utt_id: u.duration_s for u in ctx.manifest.utterances},
            vpc_folders=vpc_folders_of(ctx.protocol),
        )
        report.raise_for_problems()
        return {"report": REPORT_NAME}

    return ctx.run_stage("archive-check", inputs, make)
