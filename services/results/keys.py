"""``ResultKey``: which value of a job's results a stored key names; one format, one parse.

A job's summary (``job_summaries.metric_values``) maps ``scenario|backend|metric`` to a value,
its DET curves and kept trial sets are keyed ``scenario|backend``. Those strings are built by
:meth:`ResultKey.format` and read by :meth:`ResultKey.parse` only; no other code splits or joins
them (``tests/unit/test_result_keys.py`` greps for it).
"""

from __future__ import annotations

from dataclasses import dataclass

SEPARATOR = "|"


@dataclass(frozen=True, order=True)
class ResultKey:
    """A (scenario, back-end[, metric]) triple; ``metric`` None names a pair (a DET curve, a
    trial set). No part may be empty or hold the separator."""

    scenario: str
    backend: str
    metric: str | None = None

    def __post_init__(self) -> None:
        parts = [self.scenario, self.backend] + ([] if self.metric is None else [self.metric])
        for part in parts:
            if not part or SEPARATOR in part:
                raise ValueError(f"result key part {part!r}: empty or holding {SEPARATOR!r}")

    def format(self) -> str:
        """``scenario|backend|metric`` (``scenario|backend`` for a pair)."""
        parts = [self.scenario, self.backend] + ([] if self.metric is None else [self.metric])
        return SEPARATOR.join(parts)

    def __str__(self) -> str:
        return self.format()

    @property
    def label(self) -> str:
        """How a page names the key: ``scenario, backend[, metric]``."""
        parts = [self.scenario, self.backend] + ([] if self.metric is None else [self.metric])
        return ", ".join(parts)

    @property
    def pair(self) -> ResultKey:
        """The (scenario, back-end) key this value belongs to."""
        return ResultKey(self.scenario, self.backend)

    def with_metric(self, metric: str) -> ResultKey:
        """The key of ``metric`` in this key's (scenario, back-end)."""
        return ResultKey(self.scenario, self.backend, metric)

    @classmethod
    def parse(cls, text: str) -> ResultKey:
        """The key ``text`` names; ``ValueError`` for anything but two or three parts."""
        parts = text.split(SEPARATOR)
        if len(parts) not in (2, 3):
            raise ValueError(f"{text!r} is not a result key (scenario|backend[|metric])")
        return cls(*parts)

    @classmethod
    def parse_value_key(cls, text: str) -> ResultKey | None:
        """The key of a stored value (three parts), None for any other string."""
        try:
            key = cls.parse(text)
        except ValueError:
            return None
        return key if key.metric is not None else None
