"""Archive submissions: validation against their protocol, and the validated audio for jobs."""

from services.platform.archives.service import (
    ARCHIVE_STAGE,
    archive_protocol_config,
    archive_stage_key,
    prepare_archive,
    request_validation,
    validate_submission_archive,
)

__all__ = [
    "ARCHIVE_STAGE",
    "archive_protocol_config",
    "archive_stage_key",
    "prepare_archive",
    "request_validation",
    "validate_submission_archive",
]
