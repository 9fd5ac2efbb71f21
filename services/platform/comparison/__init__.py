"""Two submissions of one protocol side by side (metrics, differences, DET curves, utility)."""

from services.platform.comparison.service import (
    PAIRED_RESAMPLES,
    Comparison,
    ComparisonError,
    MetricComparison,
    PerSpeakerPairs,
    Side,
    compare_submissions,
)

__all__ = [
    "PAIRED_RESAMPLES",
    "Comparison",
    "ComparisonError",
    "MetricComparison",
    "PerSpeakerPairs",
    "Side",
    "compare_submissions",
]
