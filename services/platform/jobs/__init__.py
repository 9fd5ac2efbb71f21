"""Jobs: an evaluation run phase by phase, with its state, results and artifacts in the database.

- ``service``: create / re-run / cancel / cancel every job of a submission (domain operations);
- ``config``: the job's evaluation config, built once at creation;
- ``phase_queues``: the queue, time limits and task ids of each of the pipeline's phases;
- ``runner``: claim / execute / complete of one phase on a worker (``monitor``: its heartbeat);
- ``reaper``: rescue of stages whose worker died;
- ``host``: what a worker process hands the job code (database, blob store, settings, errors).
- ``records``: the job and stage rows (state machines, heartbeats, listing, counting); a leaf.

- ``reactions``: what other packages do when a job changes state (the leaderboard's summary of a
  succeeded job, the webhooks' event of a finished one); ``register_job_reactions`` installs them
  with ``records.on_job_transition``, called once where the API and the workers start (importing
  this package registers nothing).
"""

from services.platform.jobs.config import (
    anonymizer_section,
    build_job_config,
    job_config,
    run_config,
    validate_protocol_config,
)
from services.platform.jobs.cost import (
    COST_KNOB_NAMES,
    COST_KNOBS,
    CostLimitError,
    check_job_cost,
    cost_limits,
)
from services.platform.jobs.host import JobServices, is_transient_error, storage_transient_errors
from services.platform.jobs.monitor import JobCancelledError, StageMonitor, StageSupersededError
from services.platform.jobs.phase_queues import (
    DEFAULT_STAGE_TIME_LIMITS_S,
    PHASE_QUEUES,
    QUEUES,
    job_stage_names,
    next_phase,
    phase_of_stage,
    stage_hard_time_limit_s,
    stage_time_limit_s,
    task_id_for,
    task_ids_of_job,
)
from services.platform.jobs.reaper import (
    ArchiveReapReport,
    ReapReport,
    reap_archive_uploads,
    reap_stale_stages,
)
from services.platform.jobs.runner import (
    PhaseClaim,
    PhaseOutcome,
    TransientPhaseError,
    claim_phase,
    complete_phase,
    give_up,
    run_job_phase,
)
from services.platform.jobs.service import (
    JobFinishedError,
    JobWithoutProtocolError,
    NewJob,
    SubmissionNotAcceptedError,
    cancel_job,
    cancel_jobs_of_submission,
    create_job,
    fail_if_not_queued,
    queue_phase,
    rerun_job,
    start_job,
)

__all__ = [
    "COST_KNOBS",
    "COST_KNOB_NAMES",
    "DEFAULT_STAGE_TIME_LIMITS_S",
    "PHASE_QUEUES",
    "QUEUES",
    "ArchiveReapReport",
    "CostLimitError",
    "JobCancelledError",
    "JobFinishedError",
    "JobServices",
    "JobWithoutProtocolError",
    "NewJob",
    "PhaseClaim",
    "PhaseOutcome",
    "ReapReport",
    "StageMonitor",
    "StageSupersededError",
    "SubmissionNotAcceptedError",
    "TransientPhaseError",
    "anonymizer_section",
    "build_job_config",
    "cancel_job",
    "cancel_jobs_of_submission",
    "check_job_cost",
    "claim_phase",
    "complete_phase",
    "cost_limits",
    "create_job",
    "fail_if_not_queued",
    "give_up",
    "is_transient_error",
    "job_config",
    "job_stage_names",
    "next_phase",
    "phase_of_stage",
    "queue_phase",
    "reap_archive_uploads",
    "reap_stale_stages",
    "rerun_job",
    "run_config",
    "run_job_phase",
    "stage_hard_time_limit_s",
    "stage_time_limit_s",
    "start_job",
    "storage_transient_errors",
    "task_id_for",
    "task_ids_of_job",
    "validate_protocol_config",
]
