"""The leaderboard's one ranking rule: privacy among the useful submissions.

:func:`rank_rows` orders rows by utility tier (:func:`utility_tier`, :data:`UTILITY_TIERS`), then
by the ranking metric within each tier (:func:`sort_rows`: missing values last, ties in submission
order). The leaderboard view (:mod:`services.platform.leaderboard.view`) applies it for every
surface: the JSON route, the page, its CSV and the DET and utility plots.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from services.metrics import catalogue
from services.platform.leaderboard.service import LeaderboardTableRow, MetricKey


def sort_rows(
    rows: Sequence[LeaderboardTableRow],
    *,
    key: MetricKey | None = None,
    attribute: str | None = None,
    descending: bool = False,
) -> list[LeaderboardTableRow]:
    """Rows sorted by a metric (``key``) or a row attribute; missing values last either way.

    Ties keep submission order (earlier first), so equal values rank the earlier submission first.
    """

    def value_of(row: LeaderboardTableRow) -> object:
        if key is not None:
            return row.values.get(key)
        value = getattr(row, attribute or "submitted_at")
        return value.lower() if isinstance(value, str) else value

    def is_missing(value: object) -> bool:
        return value is None or (isinstance(value, float) and math.isnan(value))

    base = sorted(rows, key=lambda r: (r.submitted_at, r.submission_id))
    present = [r for r in base if not is_missing(value_of(r))]
    missing = [r for r in base if is_missing(value_of(r))]
    # sorted() is stable, so reverse=True still keeps ties in submission order.
    present.sort(key=lambda r: value_of(r), reverse=descending)  # type: ignore[arg-type,return-value]
    return present + missing


# --- the ranking rule: privacy among the useful submissions -------------------------------------

USABLE_KEY: MetricKey = (catalogue.UTILITY_SCENARIO, catalogue.USABLE_SPEECH.key)
WER_INCREASE_KEY: MetricKey = (catalogue.UTILITY_SCENARIO, catalogue.WER_INCREASE.key)

UTILITY_TIERS: tuple[str, ...] = (
    "within the utility bound",
    "utility not measured",
    "above the utility bound",
    "unusable speech",
)
"""The leaderboard's tiers, best first: a submission never ranks above one of a better tier."""

UNUSABLE_TIER = UTILITY_TIERS.index("unusable speech")
"""The tier of rows whose speech failed the degenerate-output guard (always last)."""


def utility_tier(row: LeaderboardTableRow, measured: bool, bound: float | None) -> int:
    """Index into :data:`UTILITY_TIERS` of a row under a protocol that ``measured`` utility with
    the WER-increase ``bound`` (points; None = no bound).

    Unusable speech (the degenerate-output guard) is last whatever else; without utility on the
    protocol every other row shares the first tier.
    """
    usable = row.values.get(USABLE_KEY)
    if usable is not None and usable < 0.5:
        return UNUSABLE_TIER
    if not measured:
        return 0
    increase = row.values.get(WER_INCREASE_KEY)
    if usable is None and increase is None:
        return 1
    if bound is not None and (increase is None or increase > bound):
        return 2
    return 0


def rank_rows(
    rows: Sequence[LeaderboardTableRow],
    *,
    key: MetricKey,
    descending: bool,
    utility_measured: bool,
    wer_bound: float | None,
) -> list[LeaderboardTableRow]:
    """The protocol's ranking: by tier (:func:`utility_tier`), then by the privacy metric ``key``
    within each tier (:func:`sort_rows`: missing values last, ties in submission order)."""
    tiers: dict[int, list[LeaderboardTableRow]] = {}
    for row in rows:
        tiers.setdefault(utility_tier(row, utility_measured, wer_bound), []).append(row)
    ranked: list[LeaderboardTableRow] = []
    for tier in sorted(tiers):
        ranked += sort_rows(tiers[tier], key=key, descending=descending)
    return ranked
