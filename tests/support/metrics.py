"""A metric that exists only in tests, to follow a catalogue entry to every place that lists
metrics."""

from __future__ import annotations

from typing import Any

from services.metrics import catalogue
from services.metrics.catalogue import Metric


def dummy_metric(**fields: Any) -> Metric:
    """``dummy_score``: higher is better, 2 digits, selected everywhere (seed summary, summaries,
    the protocol scenario's leaderboard, events, tables); ``fields`` replace any of these."""
    selected: dict[str, Any] = {
        "key": "dummy_score",
        "label": "Dummy",
        "description": "A test metric.",
        "unit": "",
        "higher_is_better": True,
        "digits": 2,
        "path": ("dummy_score",),
        "seed_summary": True,
        "summarized": True,
        "leaderboard_scenarios": (catalogue.PROTOCOL_SCENARIO,),
        "in_event": True,
        "in_table": True,
    }
    return Metric(**{**selected, **fields})
