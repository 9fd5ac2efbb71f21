"""The Celery task names: tasks are sent by name, so senders never import the task modules."""

TASK_RUN_PHASE = "unmask.run_phase"
TASK_REAP = "unmask.reap_stale_stages"
TASK_VALIDATE_ARCHIVE = "unmask.validate_archive"
TASK_DELIVER_WEBHOOK = "unmask.deliver_webhook"
TASK_SWEEP_WEBHOOKS = "unmask.sweep_webhooks"
