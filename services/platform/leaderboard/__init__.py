"""Leaderboards: the latest succeeded job of each submission under a protocol, its values."""

from services.platform.leaderboard.service import (
    SUMMARY_METRICS,
    LeaderboardEntry,
    LeaderboardTableRow,
    MetricKey,
    aggregated_value,
    latest_succeeded_jobs,
    leaderboard,
    leaderboard_table,
    refresh_job_summaries,
    refresh_job_summary,
    sort_rows,
    summary_key,
)

__all__ = [
    "SUMMARY_METRICS",
    "LeaderboardEntry",
    "LeaderboardTableRow",
    "MetricKey",
    "aggregated_value",
    "latest_succeeded_jobs",
    "leaderboard",
    "leaderboard_table",
    "refresh_job_summaries",
    "refresh_job_summary",
    "sort_rows",
    "summary_key",
]
