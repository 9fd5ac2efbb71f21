"""Results and artifacts: what a job measured and produced."""

from services.platform.results.document import (
    read_trust,
    report_summary_from_document,
    result_rows_from_document,
    upload_report,
)
from services.platform.results.service import (
    ArtifactRecord,
    ReportSummary,
    ResultRow,
    get_artifact,
    job_challenger,
    job_trust,
    job_worst_case,
    list_artifacts,
    list_results,
    record_results_and_artifacts,
    replace_job_results,
)

__all__ = [
    "ArtifactRecord",
    "ReportSummary",
    "ResultRow",
    "get_artifact",
    "job_challenger",
    "job_trust",
    "job_worst_case",
    "list_artifacts",
    "list_results",
    "read_trust",
    "record_results_and_artifacts",
    "replace_job_results",
    "report_summary_from_document",
    "result_rows_from_document",
    "upload_report",
]
