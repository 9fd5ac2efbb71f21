"""The one leaderboard view of a protocol: defaults, columns, the reference row and the ranking.

:func:`build_view` decides, for one viewer, everything a leaderboard surface shows: the ranking
metric, scenario and back-end (the protocol's defaults unless asked otherwise), the back-ends to
switch between, the columns (the catalogue's leaderboard metrics, less fixed-scenario columns no
row has), the unprotected reference row (original speech), and ONE ranking: utility tier first,
then the ranking metric (:func:`services.platform.leaderboard.ranking.rank_rows`). The JSON route
(``GET /v1/protocols/{id}/leaderboard``), the page, its CSV and the DET and utility plots all
render a :class:`LeaderboardView`, so they cannot disagree on order or defaults.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from services.errors import InvalidInputError
from services.metrics import catalogue
from services.pipeline.config import parse_config
from services.platform.identity.principal import Principal
from services.platform.leaderboard.ranking import (
    UNUSABLE_TIER,
    USABLE_KEY,
    WER_INCREASE_KEY,
    rank_rows,
    sort_rows,
    utility_tier,
)
from services.platform.leaderboard.service import (
    N_SEEDS_KEY,
    LeaderboardTableRow,
    MetricKey,
    leaderboard_table,
)
from services.storage.errors import NotFoundError
from services.storage.models import ProtocolRecord
from services.vocab import HEADLINE_SCENARIOS, REFERENCE_SCENARIO, TRUST_MARKS

DET_TOP = 5
"""Submissions (by rank) the leaderboard's overlaid DET plot compares."""

FALLBACK_SCENARIO = HEADLINE_SCENARIOS[0]
FALLBACK_BACKEND = "cosine"
"""The defaults of a protocol whose stored config no longer validates (an old protocol)."""


@dataclass(frozen=True)
class Column:
    """A leaderboard column: a metric of one scenario, or a submission attribute."""

    key: str
    label: str
    title: str
    higher_is_better: bool
    metric: str | None = None
    scenario: str | None = None  # None with a metric = the protocol's leaderboard scenario
    attribute: str | None = None
    digits: int = 2
    interval: tuple[str, str] | None = None  # metrics of the 95 % interval's bounds
    std: bool = False  # the aggregate row has ``<metric>_std`` (standard deviation over seeds)
    definition: str | None = None  # anchor on the /metrics page

    def metric_key(self, default_scenario: str) -> MetricKey | None:
        """(scenario, metric) of a metric column; None for an attribute column."""
        if self.metric is None:
            return None
        return (self.scenario or default_scenario, self.metric)

    @property
    def best_first_descending(self) -> bool:
        """The first-click direction: best privacy first; newest first for dates, trustworthy
        first for the trust mark."""
        return self.higher_is_better if self.metric else self.key in ("date", "trust")


NAME_COLUMN = Column("name", "Submission", "Submission name.", False, attribute="submission_name")
TEAM_COLUMN = Column("team", "Team", "The submitting team.", False, attribute="team_slug")
DATE_COLUMN = Column("date", "Submitted", "Submission date (UTC).", False, attribute="submitted_at")
SEEDS_COLUMN = Column(
    "seeds",
    "Seeds",
    "Training seeds the values are averaged over.",
    True,
    metric=N_SEEDS_KEY,
    digits=0,
    definition="seeds",
)
TRUST_COLUMN = Column(
    "trust",
    "Trust",
    f"Whether the report's trust checks passed ({TRUST_MARKS[True]}), failed "
    f"({TRUST_MARKS[False]}, with the reason) or were not run ({TRUST_MARKS[None]}).",
    True,
    attribute="trustworthy",
    definition="trust",
)


def leaderboard_columns() -> tuple[Column, ...]:
    """Every column: submission, team, one per (catalogue leaderboard metric, scenario), seeds,
    trust mark, date. A metric column's key is the metric's key, suffixed ``.<scenario>`` when it
    shows a fixed scenario rather than the protocol's."""
    metric_columns = []
    for m in catalogue.leaderboard_metrics():
        for scenario in m.leaderboard_scenarios:
            fixed = scenario is not catalogue.PROTOCOL_SCENARIO
            several = len(m.leaderboard_scenarios) > 1
            label = f"{str(scenario).capitalize()} {m.label}" if fixed and several else m.label
            title = m.description + (f" Scenario: {scenario}." if fixed else "")
            metric_columns.append(
                Column(
                    f"{m.key}.{scenario}" if fixed else m.key,
                    label,
                    title,
                    m.higher_is_better,
                    metric=m.key,
                    scenario=scenario,
                    digits=m.digits,
                    interval=m.interval,
                    std=m.seed_summary,
                    definition=m.key,
                )
            )
    return (NAME_COLUMN, TEAM_COLUMN, *metric_columns, SEEDS_COLUMN, TRUST_COLUMN, DATE_COLUMN)


@dataclass(frozen=True)
class LeaderboardDefaults:
    """What a protocol's leaderboard ranks by, and which back-ends it can show."""

    metric: str
    scenario: str
    backend: str
    higher_is_better: bool
    backends: tuple[str, ...]
    utility_measured: bool
    wer_bound: float | None
    """The protocol's bound on the WER increase (points); None = no bound."""


_DEFAULTS_CACHE: dict[tuple[int, str], LeaderboardDefaults] = {}
"""Parsed defaults by (protocol id, content hash): a protocol version's body never changes, so
its config is parsed once per process, not at every view."""

_DEFAULTS_CACHE_SIZE = 256
_DEFAULTS_LOCK = threading.Lock()
"""Protocol versions kept; the oldest entry is dropped beyond it (bounded memory)."""


def protocol_defaults(protocol: ProtocolRecord) -> LeaderboardDefaults:
    """:func:`parse_protocol_defaults` of ``protocol``, cached by its id and content hash (a
    view never re-parses a protocol's config)."""
    key = (protocol.id, protocol.content_hash)
    cached = _DEFAULTS_CACHE.get(key)
    if cached is None:
        cached = parse_protocol_defaults(protocol)
        with _DEFAULTS_LOCK:  # pages render in a thread pool
            if len(_DEFAULTS_CACHE) >= _DEFAULTS_CACHE_SIZE:
                del _DEFAULTS_CACHE[next(iter(_DEFAULTS_CACHE))]
            _DEFAULTS_CACHE[key] = cached
    return cached


def parse_protocol_defaults(protocol: ProtocolRecord) -> LeaderboardDefaults:
    """The protocol's ranking metric (its body's ``leaderboard.metric``, else the headline
    metric), scenario (``leaderboard.scenario``, else semi-informed when evaluated, else the last
    attack scenario), back-end (``leaderboard.backend``, else the config's first; listed first in
    ``backends``) and utility rule. A protocol whose config no longer validates falls back to the
    headline metric in the semi-informed scenario with cosine scoring, without utility."""
    body = protocol.body or {}
    spec = dict(body.get("leaderboard", {}))
    metric = str(spec.get("metric") or catalogue.HEADLINE.key)
    higher = bool(spec.get("higher_is_better", catalogue.HEADLINE.higher_is_better))
    try:
        config = parse_config(dict(body.get("config", {})), source=f"protocol {protocol.id}")
    except InvalidInputError:
        return LeaderboardDefaults(
            metric, FALLBACK_SCENARIO, FALLBACK_BACKEND, higher, (FALLBACK_BACKEND,), False, None
        )
    attacks = [str(s) for s in config.scenarios if s != REFERENCE_SCENARIO]
    scenarios = attacks or [str(s) for s in config.scenarios]
    scenario = str(
        spec.get("scenario")
        or (FALLBACK_SCENARIO if FALLBACK_SCENARIO in scenarios else scenarios[-1])
    )
    backend = str(spec.get("backend") or config.backends[0])
    utility = config.utility
    return LeaderboardDefaults(
        metric=metric,
        scenario=scenario,
        backend=backend,
        higher_is_better=higher,
        backends=tuple(dict.fromkeys([backend, *(str(b) for b in config.backends)])),
        utility_measured=utility is not None,
        wer_bound=utility.max_wer_increase_percent if utility is not None else None,
    )


@dataclass
class LeaderboardView:
    """Everything a leaderboard surface shows, for one viewer.

    ``ranked`` is the protocol's ranking (the rank of every row, whatever the display order);
    ``display`` the rows in the order asked for (a column sort, or the ranking reversed);
    ``ranks`` and ``tiers`` map a submission id to its rank (1 = best) and its index into
    ``UTILITY_TIERS``.
    """

    protocol: ProtocolRecord
    metric: str
    scenario: str
    backend: str
    backends: list[str]
    higher: bool
    columns: tuple[Column, ...]
    display: list[LeaderboardTableRow]
    ranks: dict[int, int]
    ranked: list[LeaderboardTableRow]
    reference: dict[MetricKey, float | None]
    active: str | None
    descending: bool
    primary: Column | None
    utility_measured: bool = False
    wer_bound: float | None = None
    tiers: dict[int, int] = field(default_factory=dict)

    @property
    def ranking_key(self) -> MetricKey:
        """(scenario, metric) the view ranks by."""
        return (self.scenario, self.metric)

    @property
    def metric_label(self) -> str:
        """The ranking metric's label (its key when it is not catalogued)."""
        return (
            catalogue.metric(self.metric).label
            if catalogue.is_catalogued(self.metric)
            else self.metric
        )

    def det_rows(self) -> list[LeaderboardTableRow]:
        """The top :data:`DET_TOP` ranked rows the overlaid DET plot compares."""
        return self.ranked[:DET_TOP]

    def is_unusable(self, row: LeaderboardTableRow) -> bool:
        """Whether the row's speech failed the degenerate-output guard."""
        return self.tiers.get(row.submission_id, 0) == UNUSABLE_TIER


def std_of(values: dict[MetricKey, float | None], column: Column, key: MetricKey) -> float | None:
    """A metric cell's standard deviation over seeds; None with a single seed (0 by definition)
    or when the column has none."""
    if not column.std:
        return None
    seeds = values.get((key[0], N_SEEDS_KEY))
    if seeds is not None and seeds <= 1:
        return None
    return values.get((key[0], f"{column.metric}_std"))


def interval_of(
    values: dict[MetricKey, float | None], column: Column, key: MetricKey
) -> tuple[float, float] | None:
    """A metric cell's 95 % interval (low, high), when the column has one and both are stored."""
    if not column.interval:
        return None
    low = values.get((key[0], column.interval[0]))
    high = values.get((key[0], column.interval[1]))
    return None if low is None or high is None else (low, high)


def _value_keys(columns: tuple[Column, ...], ranking: MetricKey) -> list[MetricKey]:
    """Every (scenario, metric) the view reads: the ranking metric, the utility tier's inputs,
    each column's value with its spread and interval, in its scenario and on original speech."""
    keys: list[MetricKey] = [ranking, USABLE_KEY, WER_INCREASE_KEY]
    for column in columns:
        key = column.metric_key(ranking[0])
        if key is None:
            continue
        keys += [key, (REFERENCE_SCENARIO, key[1])]
        for scenario in (key[0], REFERENCE_SCENARIO):
            if column.std:
                keys += [(scenario, f"{key[1]}_std"), (scenario, N_SEEDS_KEY)]
            if column.interval:
                keys += [(scenario, bound) for bound in column.interval]
    return list(dict.fromkeys(keys))


def _reference_values(rows: list[LeaderboardTableRow]) -> dict[MetricKey, float | None]:
    """The reference row: the original-speech values of the latest evaluated job (submission
    order) that scored original speech; {} when none did."""
    for row in reversed(rows):
        if any(v is not None for k, v in row.values.items() if k[0] == REFERENCE_SCENARIO):
            return {k: v for k, v in row.values.items() if k[0] == REFERENCE_SCENARIO}
    return {}


def _shown_columns(
    columns: tuple[Column, ...], rows: list[LeaderboardTableRow]
) -> tuple[Column, ...]:
    """The columns less the fixed-scenario ones no row has (the protocol does not run that
    scenario, e.g. lazy-informed)."""
    return tuple(
        c
        for c in columns
        if c.scenario is None
        or c.metric is None
        or any(r.values.get((c.scenario, c.metric)) is not None for r in rows)
    )


def build_view(
    session: Session,
    protocol: ProtocolRecord,
    viewer: Principal | None,
    *,
    backend: str | None = None,
    sort: str | None = None,
    order: str | None = None,
    metric: str | None = None,
    scenario: str | None = None,
    higher_is_better: bool | None = None,
) -> LeaderboardView:
    """The leaderboard of ``protocol`` as ``viewer`` (None: anonymous) sees it.

    ``backend``, ``metric``, ``scenario``, ``higher_is_better``: the protocol's defaults unless
    given (a back-end the protocol does not score is a :class:`NotFoundError` naming the ones
    it scores). ``sort`` (a column key) and ``order`` (``asc``/``desc``) change the display
    order only; without ``sort`` the display is the ranking (``order`` against the metric's
    direction reverses it).
    """
    defaults = protocol_defaults(protocol)
    backend = backend or defaults.backend
    if backend not in defaults.backends:
        # A leaderboard per scored back-end: another one does not exist (404), like a protocol.
        raise NotFoundError(
            f"protocol {protocol.id} has no leaderboard for backend {backend!r}: it scores "
            f"{', '.join(defaults.backends)}"
        )
    metric = metric or defaults.metric
    scenario = scenario or defaults.scenario
    higher = defaults.higher_is_better if higher_is_better is None else higher_is_better
    all_columns = leaderboard_columns()
    rows = leaderboard_table(
        session,
        protocol.id,
        backend=backend,
        metrics=_value_keys(all_columns, (scenario, metric)),
        viewer_team_id=viewer.team_id if viewer else None,
        include_all_private=bool(viewer and viewer.is_admin),
    )
    measured, bound = defaults.utility_measured, defaults.wer_bound
    ranked = rank_rows(
        rows, key=(scenario, metric), descending=higher, utility_measured=measured, wer_bound=bound
    )
    by_key = {column.key: column for column in all_columns}
    current, primary = by_key.get(sort or ""), by_key.get(metric)
    if current is None:  # the protocol's ranking (optionally reversed)
        descending = higher if order is None else order == "desc"
        display = ranked if descending == higher else ranked[::-1]
        active = primary.key if primary is not None else None
    else:
        descending = order == "desc" if order is not None else current.best_first_descending
        display = sort_rows(
            rows,
            key=current.metric_key(scenario),
            attribute=current.attribute,
            descending=descending,
        )
        active = current.key
    return LeaderboardView(
        protocol=protocol,
        metric=metric,
        scenario=scenario,
        backend=backend,
        backends=list(defaults.backends),
        higher=higher,
        columns=_shown_columns(all_columns, rows),
        display=display,
        ranks={row.submission_id: rank for rank, row in enumerate(ranked, start=1)},
        ranked=ranked,
        reference=_reference_values(rows),
        active=active,
        descending=descending,
        primary=primary,
        utility_measured=measured,
        wer_bound=bound,
        tiers={row.submission_id: utility_tier(row, measured, bound) for row in rows},
    )
