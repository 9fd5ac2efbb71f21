"""Celery workers of the platform: the app (`workers.app`), its tasks and the dispatcher.

`celery -A workers.app worker -Q gpu` runs anonymize/train/embed phases, `-Q cpu` the score and
report phases plus archive validation and the reaper; `celery -A workers.app beat` schedules the
reaper. The work itself is in `services.pipeline.jobs` (no Celery there).
"""
