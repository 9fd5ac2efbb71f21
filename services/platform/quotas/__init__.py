"""Quotas: how many submissions and jobs a team may create (per rolling 24 h, at once)."""

from services.platform.quotas.errors import QuotaExceededError
from services.platform.quotas.service import (
    QuotaStatus,
    TeamQuotas,
    archive_storage_bytes,
    check_archive_storage_quota,
    check_job_quota,
    check_submission_quota,
    team_quotas,
)

__all__ = [
    "QuotaExceededError",
    "QuotaStatus",
    "TeamQuotas",
    "archive_storage_bytes",
    "check_archive_storage_quota",
    "check_job_quota",
    "check_submission_quota",
    "team_quotas",
]
