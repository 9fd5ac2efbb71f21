"""TEMPORARY re-export shim (issue 13): the platform's records moved to ``services.platform``.

Import from the new homes instead; the lead deletes this module once every caller moved:

- ``services.platform.identity``: teams, users, tokens, ``Principal``
- ``services.platform.protocols``, ``services.platform.submissions``
- ``services.platform.jobs.records``: jobs and stages
- ``services.platform.results``: result rows and artifacts
- ``services.platform.leaderboard``: ``leaderboard`` and the page's table
- ``services.platform.pagination`` / ``services.platform.hashing``: shared helpers

Nothing is defined here; names are unchanged.
"""

from __future__ import annotations

from services.platform.hashing import canonical_json_hash
from services.platform.identity import (
    IssuedToken,
    create_team,
    create_user,
    get_or_create_user,
    get_team,
    get_team_by_slug,
    get_token,
    issue_team_token,
    issue_token,
    lock_team,
    revoke_token,
    team_robot_email,
    verify_token,
)
from services.platform.jobs.records import (
    JOB_TRANSITIONS,
    LOG_TAIL_MAX_CHARS,
    STAGE_TRANSITIONS,
    JobCreation,
    JobPage,
    WindowUsage,
    count_jobs,
    create_job,
    ensure_stages,
    find_job_by_idempotency_key,
    get_job,
    get_stage,
    get_stage_for_update,
    heartbeat_stage,
    list_jobs,
    list_stages_in_states,
    mark_job_cancelled,
    mark_stage_enqueued,
    transition_job,
    transition_stage,
)
from services.platform.leaderboard import LeaderboardEntry, leaderboard
from services.platform.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from services.platform.protocols import (
    create_protocol,
    get_protocol,
    get_protocol_by_id,
    list_protocols,
)
from services.platform.results import (
    ArtifactRecord,
    ResultRow,
    get_artifact,
    list_artifacts,
    list_results,
    record_results_and_artifacts,
    replace_job_results,
)
from services.platform.submissions import (
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
    "DEFAULT_PAGE_SIZE",
    "JOB_TRANSITIONS",
    "LOG_TAIL_MAX_CHARS",
    "MAX_PAGE_SIZE",
    "STAGE_TRANSITIONS",
    "ArtifactRecord",
    "IssuedToken",
    "JobCreation",
    "JobPage",
    "LeaderboardEntry",
    "ResultRow",
    "SubmissionPage",
    "WindowUsage",
    "accept_submission",
    "canonical_json_hash",
    "count_jobs",
    "count_submissions",
    "create_job",
    "create_protocol",
    "create_submission",
    "create_team",
    "create_user",
    "ensure_stages",
    "find_job_by_idempotency_key",
    "find_submission_by_archive_key",
    "get_artifact",
    "get_job",
    "get_or_create_user",
    "get_protocol",
    "get_protocol_by_id",
    "get_stage",
    "get_stage_for_update",
    "get_submission",
    "get_team",
    "get_team_by_slug",
    "get_token",
    "heartbeat_stage",
    "issue_team_token",
    "issue_token",
    "leaderboard",
    "list_artifacts",
    "list_jobs",
    "list_protocols",
    "list_results",
    "list_stages_in_states",
    "list_submissions",
    "lock_team",
    "mark_job_cancelled",
    "mark_stage_enqueued",
    "record_results_and_artifacts",
    "reject_submission",
    "replace_job_results",
    "revoke_token",
    "team_robot_email",
    "transition_job",
    "transition_stage",
    "verify_token",
]
