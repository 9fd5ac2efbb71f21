"""The platform: teams, submissions, jobs and what runs them (no HTTP, no Celery here)."""
