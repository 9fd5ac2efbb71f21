"""Platform jobs: an evaluation run phase by phase, with its state, results and artifacts in the DB.

A job (``jobs`` row) is an evaluation config plus the submission it evaluates. Its stages are the
pipeline's phases (``evaluation.PHASES``): each runs as one task on the queue that suits it
(``PHASE_QUEUES``). A task calls :func:`run_job_phase`, which

1. **claims** the phase's stage in one transaction (row locks): skips a job that is finished or
   cancelled, a stage that already succeeded or is running elsewhere with a fresh heartbeat, and
   takes over a stage whose worker went silent (counting attempts);
2. **executes** ``EvaluationRun(cfg, job_dir).run(stop_after=phase)`` with a
   :class:`SyncedStageRunner`, so earlier phases' stages are reused (downloaded from the blob store
   when this host lacks them) and new ones uploaded; a :class:`StageMonitor` thread writes the
   heartbeat, progress and log tail (throttled) and watches for cancellation;
3. **completes** in one transaction: stage succeeded (artifact keys, input hash), and for the
   ``report`` phase the results and artifacts replace any earlier set and the job succeeds; only
   after the commit is the next phase's task sent.

Errors: :class:`InvalidInputError` fails the job with its message (no retry); transient errors
(lost connection to the database, broker or blob store) put the stage back to ``queued`` and
raise :class:`TransientPhaseError` for the caller to retry with backoff; anything else fails the
job with an "internal error" message and propagates. :func:`reap_stale_stages` (run periodically)
rescues stages whose worker died.

This module knows nothing of Celery: the sender of tasks is a callable (``JobServices.send``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import math
import re
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.errors import ConfigError, InvalidInputError
from services.pipeline.stage_runner import DONE_FILE
from services.pipeline.workspace import (
    StageWorkspace,
    SyncedStageRunner,
    media_type_of,
    stage_index_key,
)
from services.settings import Settings
from services.storage import repository as repo
from services.storage.blobstore import BlobStore
from services.storage.db import Database
from services.storage.errors import ConflictError
from services.storage.models import AGGREGATE_SEED, TERMINAL_STATES, Job, RunState, Stage
from services.storage.types import utc_now

if TYPE_CHECKING:
    from services.pipeline.config import EvaluationConfig

log = logging.getLogger(__name__)

# The pipeline's phases (``evaluation.PHASES``), repeated here so that importing this module (and
# the Celery app, and its health checks) does not import torch; a test keeps the two equal.
PHASES: tuple[str, ...] = ("corpus", "anonymize", "train", "embed", "score", "analyze", "report")

# Which worker pool runs each phase: "gpu" = model work (anonymize, train, embed, and the
# analyses, whose pre-restoration attack embeds transformed audio; the corpus stage goes with
# them because the anonymizer reads its audio), "cpu" = numbers (score, report).
PHASE_QUEUES: dict[str, str] = {
    "corpus": "gpu",
    "anonymize": "gpu",
    "train": "gpu",
    "embed": "gpu",
    "score": "cpu",
    "analyze": "gpu",
    "report": "cpu",
}
# Stage-runner names that belong to a phase of another name (``analysis-srd`` -> analyze).
_STAGE_PREFIX_PHASE: dict[str, str] = {"analysis-": "analyze"}


def phase_of_stage(stage: str) -> str:
    """The phase a content-addressed stage belongs to (``analysis-*`` stages: ``analyze``)."""
    for prefix, phase in _STAGE_PREFIX_PHASE.items():
        if stage.startswith(prefix):
            return phase
    return stage


QUEUES: tuple[str, ...] = ("gpu", "cpu")

# Soft time limits per phase (seconds) when Settings.stage_time_limits_s does not name the phase.
DEFAULT_STAGE_TIME_LIMITS_S: dict[str, float] = {
    "corpus": 2 * 3600.0,
    "anonymize": 12 * 3600.0,
    "train": 48 * 3600.0,
    "embed": 6 * 3600.0,
    "score": 6 * 3600.0,
    "analyze": 12 * 3600.0,
    "report": 3600.0,
}
# Throttle of progress/log writes while a stage reports often (seconds).
PROGRESS_WRITE_INTERVAL_S = 2.0


def job_stage_names() -> list[str]:
    """The stage names of every job, in order (one per pipeline phase)."""
    return list(PHASES)


def next_phase(phase: str) -> str | None:
    """The phase after ``phase``, or None after the last."""
    index = PHASES.index(phase)
    return PHASES[index + 1] if index + 1 < len(PHASES) else None


def stage_time_limit_s(settings: Settings, phase: str) -> float:
    """Soft time limit of ``phase`` in seconds (Settings override, else the default)."""
    return float(settings.stage_time_limits_s.get(phase, DEFAULT_STAGE_TIME_LIMITS_S[phase]))


def stage_hard_time_limit_s(settings: Settings, phase: str) -> float:
    """Hard time limit of ``phase`` in seconds: soft limit plus ``stage_hard_limit_margin_s``."""
    return stage_time_limit_s(settings, phase) + settings.stage_hard_limit_margin_s


def task_id_for(job_id: int, phase: str) -> str:
    """The Celery task id of a job's phase: deterministic, so ``cancel`` can revoke it."""
    return f"unmask-job-{job_id}-{phase}"


class JobCancelledError(Exception):
    """The job was cancelled while a phase ran (raised from the progress reporter)."""


class StageSupersededError(Exception):
    """Another worker took the stage over (this one was presumed lost); stop quietly."""


class TransientPhaseError(Exception):
    """A phase hit a transient error (connection lost); retry it later.

    ``requeued``: the stage is back to ``queued`` (else it is still ``running`` in the DB and a
    retry must wait until its heartbeat is stale before taking it over).
    """

    def __init__(self, message: str, *, requeued: bool) -> None:
        super().__init__(message)
        self.requeued = requeued


def _transient_error_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    try:
        from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError

        types += [OperationalError, InterfaceError, DisconnectionError]
    except ImportError:  # pragma: no cover - sqlalchemy is a dependency
        pass
    try:
        import psycopg

        types += [psycopg.OperationalError]
    except ImportError:  # pragma: no cover
        pass
    try:
        from botocore.exceptions import (
            ConnectionClosedError,
            ConnectTimeoutError,
            EndpointConnectionError,
            ReadTimeoutError,
        )

        types += [EndpointConnectionError, ConnectionClosedError, ReadTimeoutError]
        types += [ConnectTimeoutError]
    except ImportError:  # pragma: no cover
        pass
    try:
        import redis.exceptions

        types += [redis.exceptions.ConnectionError, redis.exceptions.TimeoutError]
    except ImportError:  # pragma: no cover
        pass
    try:
        import kombu.exceptions

        types += [kombu.exceptions.OperationalError]
    except ImportError:  # pragma: no cover
        pass
    return tuple(types)


_TRANSIENT_TYPES: tuple[type[BaseException], ...] | None = None


def is_transient_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause) is a lost connection to the database, broker or S3."""
    global _TRANSIENT_TYPES
    if _TRANSIENT_TYPES is None:
        _TRANSIENT_TYPES = _transient_error_types()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, InvalidInputError):
            return False
        if isinstance(current, _TRANSIENT_TYPES):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


# --- the services a phase needs ----------------------------------------------------------------


@dataclass
class JobServices:
    """Database, blob store, settings, this host's name, and the task sender.

    ``send(job_id, phase)`` sends the task of a phase (Celery in the platform; a direct call in
    tests); it is called only after the transaction that queued the stage committed.
    """

    database: Database
    store: BlobStore
    settings: Settings
    send: Callable[[int, str], None]
    worker_host: str = field(default_factory=socket.gethostname)

    def stages_dir(self) -> Path:
        """The host's shared stage cache (content-addressed, shared by all jobs)."""
        return self.settings.resolved_work_dir() / "stages"

    def job_dir(self, job_id: int) -> Path:
        """The local folder of one job (report, plots)."""
        return self.settings.resolved_work_dir() / "jobs" / str(job_id)


@dataclass(frozen=True)
class PhaseOutcome:
    """What one delivery of a phase task did.

    ``status``: succeeded | skipped | failed | cancelled | superseded; ``detail`` says why.
    """

    job_id: int
    phase: str
    status: str
    detail: str = ""
    next_phase: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (the Celery task's return value)."""
        return {
            "job_id": self.job_id,
            "phase": self.phase,
            "status": self.status,
            "detail": self.detail,
            "next_phase": self.next_phase,
        }


# --- config of a job -----------------------------------------------------------------------------


def job_evaluation_config(job: Job, settings: Settings | None = None) -> EvaluationConfig:
    """The evaluation config of ``job``: its stored config with the submission's anonymizer.

    Built-in submissions set ``anonymizer`` from their name and parameters. Archive and container
    submissions need the job's config to name the prepared archive folder / image (the pipeline
    runs them through ``anonymizer.kind``). Device knobs come from ``settings`` (they do not
    change results, so they are not part of any stage key).
    """
    from services.pipeline.config import AnonymizerSpec, parse_config

    data = dict(job.config or {})
    submission = job.submission
    if submission.kind == "builtin":
        spec = AnonymizerSpec(
            kind="builtin",
            name=submission.builtin_name or "",
            params=dict(submission.builtin_params or {}),
        )
        data["anonymizer"] = spec.model_dump(mode="json")
    elif submission.kind == "container":
        anonymizer = dict(data.get("anonymizer") or {})
        anonymizer.update(
            {
                "kind": "container",
                "image": f"{submission.container_image}@{submission.container_digest}",
            }
        )
        data["anonymizer"] = anonymizer
    else:
        # The validated audio is fetched by ``prepare_archive`` when the phase runs.
        data["anonymizer"] = {"kind": "archive", "archive": submission.archive_blob_key}
    cfg = parse_config(data, f"job {job.id} config")
    if settings is not None:
        runtime: dict[str, Any] = {"dataloader_workers": settings.dataloader_workers}
        if settings.device != "auto":
            runtime["device"] = settings.device
        cfg = cfg.model_copy(update={"training": cfg.training.model_copy(update=runtime)})
    return cfg


# --- heartbeat, progress, cancellation ---------------------------------------------------------


class StageMonitor:
    """Heartbeat thread of a running stage; also the pipeline's progress reporter.

    ``report(stage, fraction, message)`` only stores the latest values (cheap, called often); the
    thread writes heartbeat + progress + a log line at most every ``PROGRESS_WRITE_INTERVAL_S``
    while there is news, and at least every ``heartbeat_interval_s``. It reads the job's state in
    the same transaction: a cancelled job (or a stage taken over by another worker) makes the next
    ``report`` or ``check`` raise, which stops the phase between steps.
    """

    def __init__(
        self,
        database: Database,
        job_id: int,
        stage_id: int,
        phase: str,
        *,
        heartbeat_interval_s: float,
        progress_interval_s: float = PROGRESS_WRITE_INTERVAL_S,
    ) -> None:
        self.database = database
        self.job_id = job_id
        self.stage_id = stage_id
        self.phase = phase
        self.heartbeat_interval_s = heartbeat_interval_s
        self.progress_interval_s = min(progress_interval_s, heartbeat_interval_s)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._cancelled = threading.Event()
        self._superseded = threading.Event()
        self._fraction: float | None = None
        self._message: str | None = None
        self._written_message: str | None = None
        self._dirty = False
        self._last_write = 0.0
        self._thread: threading.Thread | None = None
        self.writes = 0

    # The reporter the pipeline calls (``ProgressReporter``).
    def report(self, stage: str, fraction: float, message: str) -> None:
        """Remember the latest progress; raise if the job was cancelled or the stage lost."""
        self.check(stage)
        with self._lock:
            # Earlier phases' stages are reused and stay quiet; a message of another stage is a
            # summary the pipeline prints while passing through, not this phase's progress.
            if stage != self.phase:
                return
            if math.isfinite(fraction):
                self._fraction = min(max(float(fraction), 0.0), 1.0)
            self._message = f"[{stage}] {message}"
            self._dirty = True

    def check(self, stage: str = "") -> None:
        """Raise :class:`JobCancelledError` / :class:`StageSupersededError` when due."""
        if self._cancelled.is_set():
            raise JobCancelledError(f"job {self.job_id} was cancelled")
        if self._superseded.is_set():
            raise StageSupersededError(f"stage {self.stage_id} was taken over by another worker")

    def __enter__(self) -> StageMonitor:
        self._thread = threading.Thread(
            target=self._loop, name=f"heartbeat-job{self.job_id}-{self.phase}", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def flush(self) -> None:
        """Write heartbeat, progress and the latest message now (one transaction)."""
        with self._lock:
            fraction = self._fraction
            message = self._message if self._message != self._written_message else None
            self._dirty = False
        with self.database.session_scope() as session:
            job = repo.get_job(session, self.job_id)
            if job.state == RunState.CANCELLED.value:
                self._cancelled.set()
            try:
                repo.heartbeat_stage(
                    session,
                    self.stage_id,
                    progress=fraction,
                    log=f"{message}\n" if message else None,
                )
            except ConflictError:
                # The stage left "running" under us: requeued by the reaper or cancelled.
                if job.state != RunState.CANCELLED.value:
                    self._superseded.set()
        self._written_message = message or self._written_message
        self._last_write = time.monotonic()
        self.writes += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.progress_interval_s):
            since = time.monotonic() - self._last_write
            if since < self.heartbeat_interval_s and not self._dirty:
                continue
            try:
                self.flush()
            except Exception as exc:  # a DB hiccup must not kill the stage; the next beat retries
                log.warning("heartbeat of stage %s failed: %s", self.stage_id, exc)


# --- claim / complete / fail -------------------------------------------------------------------


@dataclass(frozen=True)
class _Claim:
    stage_id: int
    attempt: int
    config: EvaluationConfig
    archive_sha256: str | None = None


def _stage_of(session: Any, job_id: int, phase: str) -> Stage:
    stages = repo.ensure_stages(session, job_id, job_stage_names())
    by_name = {s.name: s for s in stages}
    return repo.get_stage_for_update(session, by_name[phase].id)


def _fail_job(session: Any, job: Job, stage: Stage | None, reason: str) -> None:
    if stage is not None and stage.state not in {s.value for s in TERMINAL_STATES}:
        repo.transition_stage(session, stage.id, RunState.FAILED.value, error=reason)
    if job.state not in {s.value for s in TERMINAL_STATES}:
        repo.transition_job(session, job.id, RunState.FAILED.value, error_message=reason)
    for other in job.stages:
        if other.state == RunState.QUEUED.value:
            repo.transition_stage(session, other.id, RunState.CANCELLED.value)


def _claim(services: JobServices, job_id: int, phase: str) -> _Claim | PhaseOutcome:
    settings = services.settings
    now = utc_now()
    with services.database.session_scope() as session:
        job = repo.get_job(session, job_id, lock=True)
        if job.state in {s.value for s in TERMINAL_STATES}:
            return PhaseOutcome(job_id, phase, "skipped", f"job is {job.state}")
        stage = _stage_of(session, job_id, phase)
        earlier = [s for s in job.stages if s.position < stage.position]
        pending = [s.name for s in earlier if s.state != RunState.SUCCEEDED.value]
        if pending:
            return PhaseOutcome(job_id, phase, "skipped", f"waiting for {', '.join(pending)}")
        if stage.state in {s.value for s in TERMINAL_STATES}:
            return PhaseOutcome(job_id, phase, "skipped", f"stage is {stage.state}")
        if stage.state == RunState.RUNNING.value:
            beat = stage.heartbeat_at or stage.started_at or now
            silent_s = (now - beat).total_seconds()
            if silent_s < settings.stage_stale_after_s:
                return PhaseOutcome(
                    job_id, phase, "skipped", f"running on {stage.worker_host} (duplicate task)"
                )
            if stage.attempts >= settings.stage_max_attempts:
                reason = (
                    f"stage {phase} failed: worker {stage.worker_host} lost (no heartbeat for"
                    f" {silent_s:.0f} s) after {stage.attempts} attempts"
                )
                _fail_job(session, job, stage, reason)
                return PhaseOutcome(job_id, phase, "failed", reason)
            repo.transition_stage(
                session,
                stage.id,
                RunState.QUEUED.value,
                error=f"taken over: worker {stage.worker_host} silent for {silent_s:.0f} s",
            )
        try:
            config = job_evaluation_config(job, settings)
        except InvalidInputError as exc:
            _fail_job(session, job, stage, str(exc))
            return PhaseOutcome(job_id, phase, "failed", str(exc))
        repo.transition_stage(
            session, stage.id, RunState.RUNNING.value, worker_host=services.worker_host, now=now
        )
        if job.state == RunState.QUEUED.value:
            repo.transition_job(session, job_id, RunState.RUNNING.value, now=now)
        return _Claim(stage.id, stage.attempts, config, job.submission.archive_sha256)


def _still_ours(session: Any, job: Job, stage: Stage, claim: _Claim) -> bool:
    return stage.state == RunState.RUNNING.value and stage.attempts == claim.attempt


def _input_hash(stage_keys: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(stage_keys)).encode()).hexdigest()


def _send_next(services: JobServices, job_id: int, phase: str | None) -> None:
    if phase is None:
        return
    try:
        services.send(job_id, phase)
    except Exception as exc:
        # The stage is queued and marked as sent; the reaper re-sends it after
        # stage_requeue_after_s, so a broker hiccup here delays the job instead of losing it.
        log.error("could not send phase %s of job %s: %s", phase, job_id, exc)


def _complete(
    services: JobServices,
    job_id: int,
    phase: str,
    claim: _Claim,
    *,
    artifact_keys: Mapping[str, str],
    input_hash: str,
    results: list[repo.ResultRow] | None = None,
    artifacts: list[repo.ArtifactRecord] | None = None,
) -> PhaseOutcome:
    following = next_phase(phase)
    with services.database.session_scope() as session:
        job = repo.get_job(session, job_id, lock=True)
        stage = repo.get_stage_for_update(session, claim.stage_id)
        if job.state == RunState.CANCELLED.value:
            if stage.state == RunState.RUNNING.value:
                repo.transition_stage(session, stage.id, RunState.CANCELLED.value)
            return PhaseOutcome(job_id, phase, "cancelled", "job was cancelled")
        if not _still_ours(session, job, stage, claim):
            return PhaseOutcome(
                job_id, phase, "superseded", f"stage is {stage.state}, attempt {stage.attempts}"
            )
        repo.transition_stage(
            session,
            stage.id,
            RunState.SUCCEEDED.value,
            artifact_keys=dict(artifact_keys),
            input_hash=input_hash,
        )
        if phase == PHASES[-1]:
            repo.replace_job_results(
                session,
                job_id,
                results=results or [],
                artifacts=artifacts or [],
                stage_id=stage.id,
            )
            repo.transition_job(session, job_id, RunState.SUCCEEDED.value)
            following = None
        elif following is not None:
            nxt = repo.get_stage(session, job_id, following)
            if nxt.state == RunState.QUEUED.value:
                repo.mark_stage_enqueued(session, nxt.id)
            else:
                following = None
    _send_next(services, job_id, following)
    return PhaseOutcome(job_id, phase, "succeeded", next_phase=following)


def _finish_with(
    services: JobServices, job_id: int, claim: _Claim, state: RunState, reason: str
) -> None:
    with services.database.session_scope() as session:
        job = repo.get_job(session, job_id, lock=True)
        stage = repo.get_stage_for_update(session, claim.stage_id)
        if not _still_ours(session, job, stage, claim):
            return
        if state == RunState.FAILED:
            _fail_job(session, job, stage, reason)
        else:
            repo.transition_stage(session, stage.id, state.value, error=reason or None)


def _requeue(services: JobServices, job_id: int, claim: _Claim, reason: str) -> bool:
    """Put our running stage back to queued for a retry; False when the DB is unreachable."""
    try:
        with services.database.session_scope() as session:
            job = repo.get_job(session, job_id, lock=True)
            stage = repo.get_stage_for_update(session, claim.stage_id)
            if not _still_ours(session, job, stage, claim):
                return True
            repo.transition_stage(session, stage.id, RunState.QUEUED.value, error=reason)
            repo.mark_stage_enqueued(session, stage.id)
        return True
    except Exception as exc:
        log.warning("could not requeue stage %s: %s", claim.stage_id, exc)
        return False


def give_up(services: JobServices, job_id: int, phase: str, reason: str) -> None:
    """Fail a job whose phase kept hitting transient errors (retries exhausted)."""
    with services.database.session_scope() as session:
        job = repo.get_job(session, job_id, lock=True)
        stage = _stage_of(session, job_id, phase)
        if job.state not in {s.value for s in TERMINAL_STATES}:
            _fail_job(session, job, stage, reason)


# --- results ------------------------------------------------------------------------------------

_ROW_IDENTITY = {"scenario", "backend", "seed", "stage_key", "det"}


def _flatten_metrics(prefix: str, value: Any, out: dict[str, float | None]) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        out[prefix] = float(value)
    elif value is None:
        out[prefix] = None
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            if key in ("pmf", "category"):
                continue
            _flatten_metrics(f"{prefix}_{key}" if prefix else str(key), inner, out)
    elif isinstance(value, list | tuple) and len(value) == 2 and "ci95" in prefix:
        _flatten_metrics(f"{prefix}_low", value[0], out)
        _flatten_metrics(f"{prefix}_high", value[1], out)


def result_rows_from_document(document: Mapping[str, Any]) -> list[repo.ResultRow]:
    """Long-format result rows of a report's ``results.json``.

    One row per (scenario, back-end, seed, metric) from ``rows`` (nested values flattened with
    ``_``: ``zebra_expected_disclosure_bits``, ``srd_empirical_mean_disclosure_bits``,
    ``eer_ci95_percent_low``, ...), plus seed ``AGGREGATE_SEED`` rows from ``summary``: the mean
    over seeds under the metric's own name and the standard deviation under ``<metric>_std``.
    """
    rows: dict[tuple[str, str, int, str], float | None] = {}
    for row in document.get("rows", []):
        metrics: dict[str, float | None] = {}
        for key, value in row.items():
            if key not in _ROW_IDENTITY:
                _flatten_metrics(key, value, metrics)
        for metric, value in metrics.items():
            rows[(row["scenario"], row["backend"], int(row["seed"]), metric[:64])] = value
    for entry in document.get("summary", []):
        for metric, value in entry.items():
            if metric in ("scenario", "backend"):
                continue
            key = (entry["scenario"], entry["backend"], AGGREGATE_SEED)
            if metric == "n_seeds":
                rows[(*key, "n_seeds")] = float(value)
            elif isinstance(value, Mapping):
                rows[(*key, metric[:64])] = value.get("mean")
                rows[(*key, f"{metric}_std"[:64])] = value.get("std")
            elif value is None:
                rows[(*key, metric[:64])] = None
    return [
        repo.ResultRow(scenario, backend, seed, metric, value)
        for (scenario, backend, seed, metric), value in rows.items()
    ]


def upload_report(store: BlobStore, job_id: int, job_dir: Path) -> list[repo.ArtifactRecord]:
    """Upload ``results.json`` and the plots of a job folder under ``jobs/<id>/``."""
    files = [job_dir / "results.json"]
    plots = job_dir / "plots"
    if plots.is_dir():
        files += sorted(p for p in plots.rglob("*") if p.is_file())
    records = []
    for path in files:
        relative = path.relative_to(job_dir).as_posix()
        info = store.put_file(f"jobs/{job_id}/{relative}", path, media_type=media_type_of(path))
        assert info.sha256 is not None
        records.append(repo.ArtifactRecord(info.key, info.size_bytes, info.sha256, info.media_type))
    return records


# --- the phase ----------------------------------------------------------------------------------

# Validated archives are kept like stage folders: stage "archive", key = the archive's sha256.
ARCHIVE_STAGE = "archive"


def archive_stage_key(archive_sha256: str) -> str:
    """The stage-folder key of a validated archive (its sha256, shortened like stage keys)."""
    return archive_sha256[:16]


def prepare_archive(
    workspace: StageWorkspace, config: EvaluationConfig, archive_sha256: str | None
) -> EvaluationConfig:
    """Point an archive job's config at the local folder of its validated audio.

    The archive validation task leaves the extracted audio as the stage folder
    ``archive/<sha256[:16]>`` in the blob store; this downloads it when missing.
    """
    if config.anonymizer.kind != "archive":
        return config
    if archive_sha256 is None:
        raise ConfigError("archive submission without archive_sha256")
    key = archive_stage_key(archive_sha256)
    workspace.download(ARCHIVE_STAGE, key)
    if not workspace.is_local(ARCHIVE_STAGE, key):
        raise InvalidInputError(
            f"the archive {config.anonymizer.archive} has not been validated (no extracted audio)"
        )
    folder = workspace.local_folder(ARCHIVE_STAGE, key)
    anonymizer = config.anonymizer.model_copy(update={"archive": folder})
    return config.model_copy(update={"anonymizer": anonymizer})


@dataclass(frozen=True)
class _Finished:
    """What a phase produced, to be recorded by :func:`_complete`."""

    artifact_keys: dict[str, str]
    input_hash: str
    results: list[repo.ResultRow] | None = None
    artifacts: list[repo.ArtifactRecord] | None = None


def _execute(
    services: JobServices, job_id: int, phase: str, claim: _Claim, monitor: StageMonitor
) -> _Finished:
    from services.anonymizers.container import ContainerSandbox
    from services.pipeline.evaluation import EvaluationRun

    stages_dir = services.stages_dir()
    job_dir = services.job_dir(job_id)
    workspace = StageWorkspace(services.store, stages_dir)
    config = prepare_archive(workspace, claim.config, claim.archive_sha256)
    run = EvaluationRun(
        config,
        job_dir,
        cache_dir=services.settings.resolved_cache_dir(),
        progress=monitor.report,
        sandbox=ContainerSandbox.from_settings(services.settings),
    )
    runner = SyncedStageRunner(stages_dir, workspace, before_stage=monitor.check)
    run.runner = runner
    monitor.report(phase, 0.0, f"phase {phase} started on {services.worker_host}")
    document = run.run(stop_after=phase)  # type: ignore[arg-type]
    monitor.check()
    mine = [o for o in runner.log if phase_of_stage(o.stage) == phase]
    artifact_keys = {f"{o.stage}/{o.key}": stage_index_key(o.stage, o.key) for o in mine}
    input_hash = _input_hash(f"{o.stage}/{o.key}" for o in mine)
    results = artifacts = None
    if phase == PHASES[-1]:
        assert document is not None
        results = result_rows_from_document(json.loads((job_dir / "results.json").read_text()))
        artifacts = upload_report(services.store, job_id, job_dir)
        artifact_keys = {**artifact_keys, "results": f"jobs/{job_id}/results.json"}
    return _Finished(artifact_keys, input_hash, results, artifacts)


def run_job_phase(
    services: JobServices, job_id: int, phase: str, *, time_limit_s: float | None = None
) -> PhaseOutcome:
    """Run one phase of a job (claim, execute, complete); see the module docstring.

    Raises :class:`TransientPhaseError` for a retryable failure; unexpected errors fail the job
    and propagate. ``time_limit_s`` only words the message when the phase is stopped by a time
    limit (seconds).
    """
    if phase not in PHASES:
        raise ConfigError(f"unknown phase {phase!r}; one of {', '.join(PHASES)}")
    try:
        claimed = _claim(services, job_id, phase)
    except Exception as exc:
        if is_transient_error(exc):  # nothing changed in the DB: the stage is still queued
            reason = f"transient error claiming phase {phase}: {type(exc).__name__}: {exc}"
            raise TransientPhaseError(reason, requeued=True) from exc
        raise
    if isinstance(claimed, PhaseOutcome):
        log.info("job %s phase %s: %s (%s)", job_id, phase, claimed.status, claimed.detail)
        return claimed
    monitor = StageMonitor(
        services.database,
        job_id,
        claimed.stage_id,
        phase,
        heartbeat_interval_s=services.settings.heartbeat_interval_s,
    )
    try:
        # The heartbeat thread stops before the completing transaction, so it cannot write
        # progress after the stage is marked succeeded.
        with monitor:
            finished = _execute(services, job_id, phase, claimed, monitor)
        return _complete(
            services,
            job_id,
            phase,
            claimed,
            artifact_keys=finished.artifact_keys,
            input_hash=finished.input_hash,
            results=finished.results,
            artifacts=finished.artifacts,
        )
    except JobCancelledError:
        _finish_with(services, job_id, claimed, RunState.CANCELLED, "")
        return PhaseOutcome(job_id, phase, "cancelled", "job was cancelled")
    except StageSupersededError as exc:
        return PhaseOutcome(job_id, phase, "superseded", str(exc))
    except InvalidInputError as exc:
        _finish_with(services, job_id, claimed, RunState.FAILED, str(exc))
        return PhaseOutcome(job_id, phase, "failed", str(exc))
    except BaseException as exc:
        if not isinstance(exc, Exception):
            # SystemExit / KeyboardInterrupt: the worker is shutting down, the job is fine;
            # hand the phase to another worker now rather than after the heartbeat goes stale.
            if _requeue(services, job_id, claimed, f"worker {services.worker_host} shut down"):
                _send_next(services, job_id, phase)
            raise
        if is_transient_error(exc):
            reason = f"transient error in phase {phase}: {type(exc).__name__}: {exc}"
            requeued = _requeue(services, job_id, claimed, reason)
            raise TransientPhaseError(reason, requeued=requeued) from exc
        if type(exc).__name__ in ("SoftTimeLimitExceeded", "TimeLimitExceeded"):
            limit = f" of {time_limit_s:.0f} s" if time_limit_s is not None else ""
            reason = f"phase {phase} exceeded its time limit{limit}"
        else:
            reason = f"internal error in phase {phase}: {type(exc).__name__}: {exc}"
        try:
            _finish_with(services, job_id, claimed, RunState.FAILED, reason)
        except Exception as record_exc:
            log.error("could not record the failure of job %s: %s", job_id, record_exc)
        raise


# --- starting and cancelling ---------------------------------------------------------------------


def start_job(services: JobServices, job_id: int) -> str | None:
    """Send the task of the job's first unfinished phase; returns that phase (None: nothing)."""
    with services.database.session_scope() as session:
        job = repo.get_job(session, job_id, lock=True)
        if job.state in {s.value for s in TERMINAL_STATES}:
            return None
        stages = repo.ensure_stages(session, job_id, job_stage_names())
        first = next((s for s in stages if s.state != RunState.SUCCEEDED.value), None)
        if first is None or first.state != RunState.QUEUED.value:
            return None
        repo.mark_stage_enqueued(session, first.id)
        phase = first.name
    services.send(job_id, phase)
    return phase


def cancel_unstarted_stages(database: Database, job_id: int) -> int:
    """Mark a cancelled job's queued stages cancelled (the running one stops on its own)."""
    count = 0
    with database.session_scope() as session:
        job = repo.get_job(session, job_id, lock=True)
        for stage in job.stages:
            if stage.state == RunState.QUEUED.value:
                repo.transition_stage(session, stage.id, RunState.CANCELLED.value)
                count += 1
    return count


# --- the reaper ---------------------------------------------------------------------------------


@dataclass
class ReapReport:
    """What one reaper pass did (lists of ``(job_id, stage name)``)."""

    requeued: list[tuple[int, str]] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)
    cancelled: list[tuple[int, str]] = field(default_factory=list)
    resent: list[tuple[int, str]] = field(default_factory=list)


def reap_stale_stages(services: JobServices, *, now: dt.datetime | None = None) -> ReapReport:
    """Rescue stages whose worker died, and tasks that were lost; one transaction.

    - A ``running`` stage without heartbeat for ``stage_stale_after_s`` or past its hard time
      limit goes back to ``queued`` (and its task is re-sent) while attempts remain
      (``stage_max_attempts``), else the stage and job fail with a reason the user sees.
    - A ``queued`` stage whose earlier stages all succeeded and whose task was sent more than
      ``stage_requeue_after_s`` ago (or never) has its task re-sent (duplicates are harmless:
      a claimed stage is skipped).
    - Unfinished stages of finished (cancelled/failed) jobs are cancelled.
    """
    settings = services.settings
    now = now or utc_now()
    report = ReapReport()
    to_send: list[tuple[int, str]] = []
    terminal = {s.value for s in TERMINAL_STATES}
    with services.database.session_scope() as session:
        candidates = repo.list_stages_in_states(
            session, [RunState.RUNNING.value, RunState.QUEUED.value]
        )
        for candidate in candidates:
            job = repo.get_job(session, candidate.job_id, lock=True)
            stage = repo.get_stage_for_update(session, candidate.id)
            ident = (job.id, stage.name)
            if stage.state in terminal:
                continue
            if job.state in terminal:
                repo.transition_stage(
                    session, stage.id, RunState.CANCELLED.value, error=f"job {job.state}"
                )
                report.cancelled.append(ident)
                continue
            if stage.state == RunState.RUNNING.value:
                beat = stage.heartbeat_at or stage.started_at or now
                silent_s = (now - beat).total_seconds()
                started = stage.started_at or now
                ran_s = (now - started).total_seconds()
                hard_limit = stage_hard_time_limit_s(settings, stage.name)
                if silent_s >= settings.stage_stale_after_s:
                    reason = (
                        f"worker {stage.worker_host} lost: no heartbeat for {silent_s:.0f} s"
                        f" (limit {settings.stage_stale_after_s:.0f} s)"
                    )
                elif ran_s >= hard_limit:
                    reason = f"stage {stage.name} exceeded its time limit of {hard_limit:.0f} s"
                else:
                    continue
                if stage.attempts < settings.stage_max_attempts and "time limit" not in reason:
                    repo.transition_stage(session, stage.id, RunState.QUEUED.value, error=reason)
                    repo.mark_stage_enqueued(session, stage.id, now=now)
                    report.requeued.append(ident)
                    to_send.append(ident)
                else:
                    final = f"stage {stage.name} failed after {stage.attempts} attempt(s): {reason}"
                    _fail_job(session, job, stage, final)
                    report.failed.append(ident)
                continue
            # queued: re-send a task that was lost (or never sent) once its turn has come
            earlier = [s for s in job.stages if s.position < stage.position]
            if any(s.state != RunState.SUCCEEDED.value for s in earlier):
                continue
            sent = stage.heartbeat_at
            if sent is None or (now - sent).total_seconds() >= settings.stage_requeue_after_s:
                repo.mark_stage_enqueued(session, stage.id, now=now)
                report.resent.append(ident)
                to_send.append(ident)
    for job_id, phase in to_send:
        _send_next(services, job_id, phase)
    return report


# --- archive submissions --------------------------------------------------------------------------


_ARCHIVE_KEY_RE = re.compile(r"^archives/protocol-(\d+)/")


def archive_protocol_config(services: JobServices, archive_key: str) -> EvaluationConfig:
    """The evaluation config of the protocol an archive was uploaded for.

    The protocol id travels in the blob key (``archives/protocol-<id>/team-<id>/<uuid>``, see
    api/uploads.py); its body's ``config`` is an evaluation config without anonymizer.
    """
    from services.pipeline.config import parse_config

    match = _ARCHIVE_KEY_RE.match(archive_key)
    if match is None:
        raise InvalidInputError(f"archive key {archive_key!r} names no protocol")
    with services.database.session_scope() as session:
        protocol = repo.get_protocol_by_id(session, int(match.group(1)))
        body = dict(protocol.body or {})
    return parse_config(dict(body.get("config", {})), f"protocol {match.group(1)} config")


def validate_submission_archive(services: JobServices, submission_id: int) -> str:
    """Validate a pending archive submission; accept it, or reject it when invalid.

    Builds (or reuses) the protocol's corpus stage to know which utterances the archive must
    hold and their durations, downloads the archive and runs
    ``services.anonymizers.archive.validate_archive`` on it. The validation report is stored
    next to the archive (``<archive key>.validation.json``). Returns the new status.
    """
    from services.anonymizers.archive import (
        ArchiveLimits,
        expected_from_protocol,
        validate_archive,
    )
    from services.pipeline.evaluation import EvaluationRun

    with services.database.session_scope() as session:
        submission = repo.get_submission(session, submission_id)
        key, sha256, status = (
            submission.archive_blob_key,
            submission.archive_sha256,
            submission.status,
        )
    if status != "pending" or key is None:
        return status
    folder = services.settings.resolved_work_dir() / "archives" / str(submission_id)
    try:
        cfg = archive_protocol_config(services, key)
        stages_dir = services.stages_dir()
        run = EvaluationRun(cfg, folder / "run")
        run.runner = SyncedStageRunner(stages_dir, StageWorkspace(services.store, stages_dir))
        protocol, manifest, _ = run.corpus_stage()
        archive_path = folder / "archive"
        info = services.store.get_to_path(key, archive_path)
        if sha256 is not None and info.sha256 != sha256:
            raise InvalidInputError(f"archive {key}: sha256 {info.sha256}, expected {sha256}")
        extracted = folder / "extracted"
        report = validate_archive(
            archive_path,
            expected_from_protocol(protocol),
            extracted,
            ArchiveLimits.from_settings(services.settings),
            {u.utt_id: u.duration_s for u in manifest.utterances},
        )
        services.store.put_bytes(
            f"{key}.validation.json",
            json.dumps(report.to_json(), default=str).encode(),
            media_type="application/json",
        )
        report.raise_for_problems()
        # Keep the validated audio as a content-addressed folder every worker can fetch.
        stage_key_ = archive_stage_key(info.sha256 or "")
        workspace = StageWorkspace(services.store, stages_dir)
        if not workspace.is_local(ARCHIVE_STAGE, stage_key_):
            (extracted / DONE_FILE).write_text(json.dumps({"archive": key, "sha256": info.sha256}))
            target = workspace.local_folder(ARCHIVE_STAGE, stage_key_)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(target, ignore_errors=True)
            extracted.rename(target)
        workspace.upload(ARCHIVE_STAGE, stage_key_)
    except InvalidInputError as exc:
        log.info("archive of submission %s rejected: %s", submission_id, exc)
        with services.database.session_scope() as session:
            repo.reject_submission(session, submission_id)
        return "rejected"
    finally:
        shutil.rmtree(folder / "archive", ignore_errors=True)
    with services.database.session_scope() as session:
        repo.accept_submission(session, submission_id)
    return "accepted"
