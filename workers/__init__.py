"""Celery workers of the platform: the app (`workers.app`), the task bodies, the outbox senders.

`celery -A workers.app worker -Q gpu` runs anonymize/train/embed phases, `-Q cpu` the score and
report phases plus archive validation, webhooks and the reaper; `celery -A workers.app beat`
schedules the reaper and the webhook sweep and runs the outbox relay. The work itself is in
`services.platform` (no Celery there). Imports go one way: `app` -> `tasks`, `webhooks`,
`senders`, `relay` -> `runtime`, `errors`, `names` -> services/.

Importing this package first sets the OpenMP wait policy and thread count (``services.threads``)
before torch loads in any worker process.
"""

from services.settings import prepare_thread_environment

prepare_thread_environment()
