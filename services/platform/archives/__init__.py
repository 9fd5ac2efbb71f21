"""Archive submissions: validation against their protocol, and the validated audio for jobs."""

from services.platform.archives.service import (
    ARCHIVE_STAGE,
    archive_protocol_config,
    archive_stage_key,
    prepare_archive,
    reject_archive,
    reject_stuck_validations,
    report_key,
    request_validation,
    validate_submission_archive,
)
from services.platform.archives.upload_records import (
    UploadSweepReport,
    abort_multipart_upload,
    abort_stale_uploads,
    mark_upload_completed,
    record_upload,
)

__all__ = [
    "ARCHIVE_STAGE",
    "UploadSweepReport",
    "abort_multipart_upload",
    "abort_stale_uploads",
    "archive_protocol_config",
    "archive_stage_key",
    "mark_upload_completed",
    "prepare_archive",
    "record_upload",
    "reject_archive",
    "reject_stuck_validations",
    "report_key",
    "request_validation",
    "validate_submission_archive",
]
