"""The Celery app, configured from the one `Settings` (``UNMASK_*`` environment variables).

    celery -A workers.app worker -Q gpu --concurrency 1 -n gpu@%h   # anonymize, train, embed
    celery -A workers.app worker -Q cpu --concurrency 2 -n cpu@%h   # score, report, archives
    celery -A workers.app beat                                      # the periodic reaper

Broker: ``UNMASK_BROKER_URL`` (Redis in the platform); empty = a filesystem broker under
``data_dir/broker`` (embedded mode: API and worker processes on one machine share the folder).
``UNMASK_CELERY_EAGER=1`` runs tasks in the calling process. Delivery is at-least-once
(``acks_late`` + ``reject_on_worker_lost``); the tasks are idempotent (services/pipeline/jobs.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery import Celery
from kombu import Exchange, Queue

from services.pipeline.jobs import (
    DEFAULT_STAGE_TIME_LIMITS_S,
    QUEUES,
    stage_hard_time_limit_s,
)
from services.settings import Settings, get_settings

TASK_RUN_PHASE = "unmask.run_phase"
TASK_REAP = "unmask.reap_stale_stages"
TASK_VALIDATE_ARCHIVE = "unmask.validate_archive"
TASK_DELIVER_WEBHOOK = "unmask.deliver_webhook"
TASK_SWEEP_WEBHOOKS = "unmask.sweep_webhooks"


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
            Queue(name, Exchange(name, type="direct"), routing_key=name) for name in QUEUES
        ],
        "task_default_queue": "cpu",
        "task_routes": {
            TASK_REAP: {"queue": "cpu"},
            TASK_VALIDATE_ARCHIVE: {"queue": "cpu"},
            TASK_DELIVER_WEBHOOK: {"queue": "cpu"},
            TASK_SWEEP_WEBHOOKS: {"queue": "cpu"},
            # run_phase is routed per call (the phase decides: jobs.PHASE_QUEUES).
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
                "options": {"queue": "cpu", "expires": settings.reaper_interval_s},
            },
        },
        "timezone": "UTC",
    }
    if settings.broker_url:
        conf["broker_url"] = settings.broker_url
        # Redis re-delivers an unacknowledged message after the visibility timeout: it must
        # outlast the longest phase, or a running phase would be handed to a second worker.
        conf["broker_transport_options"] = {"visibility_timeout": int(longest_s + 3600)}
        if settings.broker_key_prefix:
            conf["broker_transport_options"]["global_keyprefix"] = settings.broker_key_prefix
    else:
        conf["broker_url"] = "filesystem://"
        conf["broker_transport_options"] = filesystem_broker_options(settings.data_dir)
    if settings.result_backend:
        conf["result_backend"] = settings.result_backend
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


def create_app(settings: Settings | None = None) -> Celery:
    """A configured Celery app with the Unmask tasks registered."""
    celery_app = Celery("unmask", include=["workers.tasks", "workers.webhooks"])
    return configure_app(celery_app, settings)


app = create_app()
celery = app  # `celery -A workers.app` finds either name

# Register the tasks on import (`include` is only honoured by the worker).
import workers.tasks  # noqa: E402
import workers.webhooks  # noqa: E402, F401
