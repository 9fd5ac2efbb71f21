"""The Celery task names (tasks are sent by name, so senders never import the task modules) and
the queue of the reaper (the phases' queues are the jobs' business: services/platform/jobs)."""

TASK_RUN_PHASE = "unmask.run_phase"
TASK_REAP = "unmask.reap_stale_stages"
TASK_VALIDATE_ARCHIVE = "unmask.validate_archive"
TASK_DELIVER_WEBHOOK = "unmask.deliver_webhook"
TASK_SWEEP_WEBHOOKS = "unmask.sweep_webhooks"
TASK_TRAIN_PROTOCOL_ASR = "unmask.train_protocol_asr"

QUEUE_REAPER = "reaper"
"""The reaper's own queue, consumed by a worker that runs nothing else (``worker-reaper`` in
docker-compose.yml), so a sweep never waits behind hours-long phases on the phase workers."""
