"""Results and artifacts: what a job measured and produced."""

from services.platform.results.document import result_rows_from_document, upload_report
from services.platform.results.service import (
    ArtifactRecord,
    ResultRow,
    get_artifact,
    list_artifacts,
    list_results,
    record_results_and_artifacts,
    replace_job_results,
)

__all__ = [
    "ArtifactRecord",
    "ResultRow",
    "get_artifact",
    "list_artifacts",
    "list_results",
    "record_results_and_artifacts",
    "replace_job_results",
    "result_rows_from_document",
    "upload_report",
]
