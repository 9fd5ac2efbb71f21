"""The pipeline's phases in order: the one definition every other module reads.

It imports nothing heavy, so the API process, the Celery app and its health checks read it without
loading torch.
"""

from __future__ import annotations

from typing import Literal

Phase = Literal["corpus", "anonymize", "train", "embed", "score", "utility", "analyze", "report"]

PHASES: tuple[Phase, ...] = (
    "corpus",
    "anonymize",
    "train",
    "embed",
    "score",
    "utility",
    "analyze",
    "report",
)
"""The pipeline's phases in order; the platform runs each as a Celery task on its queue."""
