"""TEMPORARY re-export: a job's evaluation config is built in services/platform/jobs/config.py.

api/routes/admin.py, pages.py and protocols.py still import these names from here; point them at
``services.platform.jobs.config`` (or its new home for protocols/leaderboards) and delete this.
"""

from services.platform.jobs.config import (
    PROTOCOL_FIXED_FIELDS,
    anonymizer_section,
    build_job_config,
    deep_merge,
    leaderboard_defaults,
    validate_protocol_config,
)

__all__ = [
    "PROTOCOL_FIXED_FIELDS",
    "anonymizer_section",
    "build_job_config",
    "deep_merge",
    "leaderboard_defaults",
    "validate_protocol_config",
]
