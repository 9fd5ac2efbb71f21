"""The Celery app, configured from the one `Settings` (``UNMASK_*`` environment variables).

    celery -A workers.app worker -Q gpu --concurrency 1 -n gpu@%h   # anonymize, train, embed
    celery -A workers.app worker -Q cpu --concurrency 2 -n cpu@%h   # score, report, archives
    celery -A workers.app worker -Q reaper --pool solo -n reaper@%h  # the reaper only
    celery -A workers.app beat                                      # reaper, sweep, outbox relay

Broker: ``UNMASK_BROKER_URL`` (Redis in the platform); empty = a filesystem broker under
``data_dir/broker`` (embedded mode: API and worker processes on one machine share the folder).
``UNMASK_CELERY_EAGER=1`` runs tasks in the calling process. Delivery is at-least-once
(``acks_late`` + ``reject_on_worker_lost``); the tasks are idempotent (services/platform/jobs/).

This module is the composition root of the worker processes: it registers the task bodies of
``workers/tasks.py`` and ``workers/webhooks.py`` by name and, at each process's start-up (Celery
signals), installs the outbox senders (``workers/senders.py``); beat also starts the outbox relay
(``workers/relay.py``), and in embedded mode (SQLite, no beat) every worker starts the relay and
the reaper as threads (:class:`EmbeddedSweeps`). Nothing else in workers/ imports it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from celery import Celery, signals
from kombu import Exchange, Queue

from services.platform.jobs.phase_queues import (
    DEFAULT_STAGE_TIME_LIMITS_S,
    QUEUES,
    stage_hard_time_limit_s,
)
from services.platform.jobs.reactions import register_job_reactions
from services.platform.outbox import install_senders
from services.settings import Settings, apply_thread_settings, get_settings
from services.storage.db import Database
from workers import tasks, webhooks
from workers.names import (
    QUEUE_REAPER,
    TASK_DELIVER_WEBHOOK,
    TASK_REAP,
    TASK_RUN_PHASE,
    TASK_SWEEP_WEBHOOKS,
    TASK_TRAIN_PROTOCOL_ASR,
    TASK_VALIDATE_ARCHIVE,
)
from workers.relay import OutboxRelay, PeriodicThread
from workers.runtime import reset_after_fork, set_node_name
from workers.senders import celery_senders

log = logging.getLogger(__name__)


def filesystem_broker_options(data_dir: Path) -> dict[str, Any]:
    """Transport options of the embedded filesystem broker (folders created here)."""
    root = (data_dir / "broker").resolve()
    queue, processed, control = root / "queue", root / "processed", root / "control"
    for folder in (queue, processed, control):
        folder.mkdir(parents=True, exist_ok=True)
    return {
        # Producers and consumers are different processes on one host: one folder for both.
        "data_folder_in": str(queue),
        "data_folder_out": str(queue),
        "processed_folder": str(processed),
        "control_folder": str(control),
        "store_processed": False,
    }


def celery_config(settings: Settings) -> dict[str, Any]:
    """The Celery configuration for ``settings`` (see the module docstring)."""
    longest_s = max(stage_hard_time_limit_s(settings, p) for p in DEFAULT_STAGE_TIME_LIMITS_S)
    conf: dict[str, Any] = {
        "task_queues": [
            Queue(name, Exchange(name, type="direct"), routing_key=name)
            for name in (*QUEUES, QUEUE_REAPER)
        ],
        "task_default_queue": "cpu",
        "task_routes": {
            # Its own queue and worker: never starved by long phases on the phase workers.
            TASK_REAP: {"queue": QUEUE_REAPER},
            TASK_VALIDATE_ARCHIVE: {"queue": "cpu"},
            TASK_DELIVER_WEBHOOK: {"queue": "cpu"},
            TASK_SWEEP_WEBHOOKS: {"queue": "cpu"},
            # Model work, beside the utility phases that would otherwise train it.
            TASK_TRAIN_PROTOCOL_ASR: {"queue": "gpu"},
            # run_phase is routed per call (the phase decides: phases.PHASE_QUEUES).
        },
        "task_serializer": "json",
        "accept_content": ["json"],
        "result_serializer": "json",
        # At-least-once: a task is acknowledged after it ran, and re-queued when its worker
        # process dies; the tasks guard themselves against double delivery.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # One task at a time per process: phases run for minutes to hours, and a GPU worker must
        # not hold a second task another GPU could start.
        "worker_prefetch_multiplier": 1,
        "task_track_started": True,
        "task_always_eager": settings.celery_eager,
        "task_store_eager_result": False,
        "broker_connection_retry_on_startup": True,
        "worker_hijack_root_logger": False,
        "beat_schedule": {
            "sweep-webhooks": {
                "task": TASK_SWEEP_WEBHOOKS,
                "schedule": settings.webhook_sweep_interval_s,
                "options": {"queue": "cpu", "expires": settings.webhook_sweep_interval_s},
            },
            "reap-stale-stages": {
                "task": TASK_REAP,
                "schedule": settings.reaper_interval_s,
                "options": {"queue": QUEUE_REAPER, "expires": settings.reaper_interval_s},
            },
        },
        "timezone": "UTC",
    }
    if settings.broker_url:
        conf["broker_url"] = settings.broker_url
        # Redis re-delivers an unacknowledged message after the visibility timeout: it must
        # outlast the longest phase, or a running phase would be handed to a second worker.
        # socket_keepalive: a broker connection whose network is cut is found dead by TCP (on
        # the system's keepalive timers) rather than never; an idle consumer's is also pinged
        # by kombu's health check.
        conf["broker_transport_options"] = {
            "visibility_timeout": int(longest_s + 3600),
            "socket_keepalive": True,
        }
        if settings.broker_key_prefix:
            conf["broker_transport_options"]["global_keyprefix"] = settings.broker_key_prefix
    else:
        conf["broker_url"] = "filesystem://"
        conf["broker_transport_options"] = filesystem_broker_options(settings.data_dir)
    if settings.result_backend:
        conf["result_backend"] = settings.result_backend
        conf["redis_socket_keepalive"] = True  # as the broker's (read by Redis backends only)
        conf["task_ignore_result"] = False
        conf["result_expires"] = 7 * 24 * 3600
    else:
        # The database is the record of every job; Celery results are optional.
        conf["task_ignore_result"] = True
    return conf


def reset_connections(celery_app: Celery) -> None:
    """Drop pooled broker connections and producers, so the next send uses the current config."""
    pool = celery_app._pool
    if pool is not None:
        pool.force_close_all()
    celery_app._pool = None
    amqp = celery_app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None


def configure_app(celery_app: Celery, settings: Settings | None = None) -> Celery:
    """(Re)configure ``celery_app`` from ``settings`` (default: the process settings)."""
    celery_app.conf.update(celery_config(settings or get_settings()))
    reset_connections(celery_app)
    return celery_app


def register_tasks(celery_app: Celery) -> None:
    """Register the task bodies on ``celery_app`` under their names (``workers/names.py``)."""
    at_least_once = {"acks_late": True, "reject_on_worker_lost": True}
    celery_app.task(bind=True, name=TASK_RUN_PHASE, **at_least_once)(tasks.run_phase)
    celery_app.task(name=TASK_REAP)(tasks.reap)
    celery_app.task(bind=True, name=TASK_VALIDATE_ARCHIVE, **at_least_once)(tasks.validate_archive)
    celery_app.task(bind=True, name=TASK_DELIVER_WEBHOOK, **at_least_once)(webhooks.deliver_webhook)
    celery_app.task(name=TASK_SWEEP_WEBHOOKS)(webhooks.sweep_webhooks)
    celery_app.task(bind=True, name=TASK_TRAIN_PROTOCOL_ASR, **at_least_once)(
        tasks.train_protocol_asr
    )


def install_outbox_senders(celery_app: Celery, settings: Settings | None = None) -> None:
    """Make this process send its outbox messages through ``celery_app`` (start-up of every
    process that writes them: workers, beat, the API, the embedded demo)."""
    settings = settings or get_settings()
    install_senders(
        celery_senders(celery_app, settings), retry_after_s=settings.outbox_resend_after_s
    )


def start_outbox_relay(settings: Settings | None = None) -> OutboxRelay:
    """Start the outbox relay thread of this process (beat's start-up)."""
    settings = settings or get_settings()
    interval_s = max(0.5, settings.outbox_resend_after_s / 2)
    relay = OutboxRelay(
        Database.from_settings(settings).engine,
        interval_s=interval_s,
        retry_after_s=settings.outbox_resend_after_s,
    )
    log.info("outbox relay: every %.1f s", interval_s)
    return relay.start()


def start_reaper_thread(settings: Settings | None = None) -> PeriodicThread:
    """Run the reaper's pass (``tasks.reap``) every ``reaper_interval_s`` in a thread of this
    process: embedded mode (``unmask demo``), which has no beat and no reaper worker."""
    settings = settings or get_settings()
    log.info("reaper: every %.1f s (thread)", settings.reaper_interval_s)
    return PeriodicThread("reaper", tasks.reap, interval_s=settings.reaper_interval_s).start()


class EmbeddedSweeps:
    """The embedded deployment's stand-in for beat, started by every embedded worker: the
    outbox relay, the reaper and the webhook sweep as threads of the worker's main process.

    Embedded mode (SQLite, filesystem broker: ``unmask demo`` or the processes of docs/deploy.md
    by hand) has no beat and no reaper worker; without these, a message whose after-commit send
    failed (the database was locked, the process died) would stay unsent. Two embedded workers
    run two relays: the outbox's claims send each message once, and the reaper's passes are
    idempotent.
    """

    def __init__(self, settings: Settings) -> None:
        self.relay = start_outbox_relay(settings)
        self.reaper = start_reaper_thread(settings)
        self.webhook_sweep = PeriodicThread(
            "webhook-sweep", webhooks.sweep_webhooks, interval_s=settings.webhook_sweep_interval_s
        ).start()

    def stop(self) -> None:
        """Stop the threads after their current pass."""
        self.relay.stop()
        self.reaper.stop()
        self.webhook_sweep.stop()


_embedded_sweeps: EmbeddedSweeps | None = None


def start_embedded_sweeps(settings: Settings | None = None) -> EmbeddedSweeps | None:
    """Start :class:`EmbeddedSweeps` once per process when ``settings`` are the embedded ones
    (SQLite); None otherwise (a server deployment runs beat and a reaper worker)."""
    global _embedded_sweeps
    settings = settings or get_settings()
    if not settings.embedded or settings.celery_eager:
        return None
    if _embedded_sweeps is None:
        _embedded_sweeps = EmbeddedSweeps(settings)
    return _embedded_sweeps


def create_app(settings: Settings | None = None) -> Celery:
    """A configured Celery app with the Unmask tasks registered (by name)."""
    # A job's state change summarizes it for the leaderboard and queues its webhook event.
    register_job_reactions()
    celery_app = Celery("unmask")
    configure_app(celery_app, settings)
    register_tasks(celery_app)
    return celery_app


app = create_app()
celery = app  # `celery -A workers.app` finds either name


# --- process start-up (Celery signals) ---------------------------------------------------------


# Whether this process is a `celery worker` (celeryd_after_setup ran): worker_ready also fires
# for a worker embedded in another process (celery.contrib.testing's, in a test), which must not
# start the sweeps on the environment's settings.
_worker_process = False


def _on_worker_setup(sender: str, **_: Any) -> None:
    global _worker_process
    set_node_name(sender)
    # A solo-pool worker runs its tasks in this process: without this it trained with torch's
    # default threads, not UNMASK_NUM_THREADS (CPU results depend on the thread count). Celery
    # 5.7's solo pool also sends worker_process_init from this process; older ones did not.
    apply_thread_settings(get_settings())
    install_outbox_senders(app)
    _worker_process = True


def _on_worker_ready(**_: Any) -> None:
    # Embedded mode has no beat: this worker relays the outbox and reaps (EmbeddedSweeps).
    # Started here, after the pool's start: a prefork pool forks its children after
    # celeryd_after_setup, and a thread running at a fork may hold a lock (logging, a database
    # pool) that then stays held in the child.
    if _worker_process:
        start_embedded_sweeps()


def _on_worker_process_init(**_: Any) -> None:
    # A child the pool forks later (a replacement) has the parent's threads' services: drop
    # them, their connections are the parent's.
    reset_after_fork()
    apply_thread_settings(get_settings())
    install_outbox_senders(app)


def _on_beat_init(**_: Any) -> None:
    install_outbox_senders(app)
    start_outbox_relay()


signals.celeryd_after_setup.connect(_on_worker_setup, weak=False)
signals.worker_ready.connect(_on_worker_ready, weak=False)
signals.worker_process_init.connect(_on_worker_process_init, weak=False)
signals.beat_init.connect(_on_beat_init, weak=False)
