"""Submissions: create, accept or reject, read, list and count a team's anonymizers."""

from services.platform.submissions.service import (
    SubmissionPage,
    accept_submission,
    count_submissions,
    create_submission,
    find_submission_by_archive_key,
    get_submission,
    list_submissions,
    reject_submission,
)

__all__ = [
    "SubmissionPage",
    "accept_submission",
    "count_submissions",
    "create_submission",
    "find_submission_by_archive_key",
    "get_submission",
    "list_submissions",
    "reject_submission",
]
