"""Leaderboards: the latest succeeded job of each submission under a protocol, its values."""

from services.platform.leaderboard.service import (
    N_SEEDS_KEY,
    LeaderboardEntry,
    LeaderboardTableRow,
    MetricKey,
    aggregated_value,
    det_curves_of,
    det_key,
    latest_succeeded_jobs,
    leaderboard,
    leaderboard_table,
    record_report_summary,
    refresh_job_summaries,
    refresh_job_summary,
    sort_rows,
    summary_key,
    summary_metric_keys,
)

__all__ = [
    "N_SEEDS_KEY",
    "LeaderboardEntry",
    "LeaderboardTableRow",
    "MetricKey",
    "aggregated_value",
    "det_curves_of",
    "det_key",
    "latest_succeeded_jobs",
    "leaderboard",
    "leaderboard_table",
    "record_report_summary",
    "refresh_job_summaries",
    "refresh_job_summary",
    "sort_rows",
    "summary_key",
    "summary_metric_keys",
]
