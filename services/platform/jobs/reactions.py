"""What other packages do when a job changes state, registered where a process starts.

The leaderboard summarizes a succeeded job and webhooks queue the event of a finished one; both
are listeners of ``records.on_job_transition``, called inside ``records.transition_job`` in the
transaction of the change. :func:`register_job_reactions` installs them: the API's and the
workers' ``create_app`` call it once (importing a package registers nothing).
"""

from __future__ import annotations

from services.platform.jobs import records
from services.platform.leaderboard import service as leaderboard_reactions
from services.platform.webhooks import payloads as webhook_reactions

JOB_REACTIONS: tuple[records.JobTransitionListener, ...] = (
    leaderboard_reactions.react_to_job_transition,
    webhook_reactions.react_to_job_transition,
)
"""The listeners of a job's state change, in the order they run."""


def register_job_reactions() -> None:
    """Install :data:`JOB_REACTIONS` with ``records.on_job_transition`` (idempotent: a listener
    registered twice runs once)."""
    for listener in JOB_REACTIONS:
        records.on_job_transition(listener)
