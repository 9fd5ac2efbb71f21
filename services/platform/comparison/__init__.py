"""Two submissions of one protocol side by side (metrics, differences, DET curves, utility)."""

from services.platform.comparison.service import (
    PAIRED_INTERVAL_NOTE,
    Comparison,
    ComparisonError,
    MetricComparison,
    Side,
    compare_submissions,
)

__all__ = [
    "PAIRED_INTERVAL_NOTE",
    "Comparison",
    "ComparisonError",
    "MetricComparison",
    "Side",
    "compare_submissions",
]
