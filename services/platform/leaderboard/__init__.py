"""Leaderboards: the latest succeeded job of each submission under a protocol, its values, and the
one view (defaults, columns, reference row, ranking) every leaderboard surface renders.

- ``service``: which job stands for a submission, its values (job summaries, aggregation);
- ``ranking``: the ranking rule (utility tiers, then the ranking metric);
- ``view``: :func:`build_view`, the :class:`LeaderboardView` the JSON route, the page, the CSV and
  the plots render.
"""

from services.platform.leaderboard.ranking import (
    UNUSABLE_TIER,
    USABLE_KEY,
    UTILITY_TIERS,
    WER_INCREASE_KEY,
    rank_rows,
    sort_rows,
    utility_tier,
)
from services.platform.leaderboard.service import (
    N_SEEDS_KEY,
    LeaderboardTableRow,
    MetricKey,
    aggregate_parts,
    det_curves_of,
    det_key,
    job_metric_values,
    job_values,
    latest_succeeded_jobs,
    leaderboard_table,
    ranked_submission_counts,
    react_to_job_transition,
    record_report_summary,
    refresh_job_summaries,
    refresh_job_summary,
    representative_job,
    summary_key,
    worst_over_attackers,
)
from services.platform.leaderboard.view import (
    DET_TOP,
    Column,
    LeaderboardDefaults,
    LeaderboardView,
    build_view,
    interval_of,
    leaderboard_columns,
    protocol_defaults,
    std_of,
)

__all__ = [
    "DET_TOP",
    "N_SEEDS_KEY",
    "UNUSABLE_TIER",
    "USABLE_KEY",
    "UTILITY_TIERS",
    "WER_INCREASE_KEY",
    "Column",
    "LeaderboardDefaults",
    "LeaderboardTableRow",
    "LeaderboardView",
    "MetricKey",
    "aggregate_parts",
    "build_view",
    "det_curves_of",
    "det_key",
    "interval_of",
    "job_metric_values",
    "job_values",
    "latest_succeeded_jobs",
    "leaderboard_columns",
    "leaderboard_table",
    "protocol_defaults",
    "rank_rows",
    "ranked_submission_counts",
    "react_to_job_transition",
    "record_report_summary",
    "refresh_job_summaries",
    "refresh_job_summary",
    "representative_job",
    "sort_rows",
    "std_of",
    "summary_key",
    "utility_tier",
    "worst_over_attackers",
]
