"""Every metric Unmask reports, once: its key, label, unit, direction, digits and where it shows.

This module is the one place a reported metric's key is spelled. The report's seed summary
(``results.json``), the long-format result rows, the job summaries behind the leaderboard, the
leaderboard page's columns, the webhook payload of a finished job, the CLI result tables and the
table in ``docs/metrics.md`` all read it. Adding a metric to the leaderboard therefore touches the
module that computes it (so that a result row carries it) and this catalogue, nothing else.

Consumers must read :data:`METRICS` through the functions below at call time (not copy it at
import), so that a test can extend the catalogue and see the new metric everywhere.

Keys are the names of the long-format result rows (``results.metric`` in the database), one name
per quantity at every seed and in the aggregate:

- :func:`result_values` reads a ``results.json`` score row: one ``(key, value)`` per catalogued
  metric found at its ``path``, stored per seed under ``key``; anything else in the row
  (uncatalogued detail) stays in ``results.json`` only.
- :func:`summary_values` reads a seed-summary entry: the mean over seeds under ``key`` (seed
  :data:`AGGREGATE_SEED`), the sample standard deviation under ``<key>_std`` and
  :data:`N_SEEDS_KEY`.
- :func:`utility_values` reads the report's ``utility`` block (one value per job).

Two rules read from here by every consumer (SQL leaderboards, job summaries, the CLI tables and
verdict, webhook payloads): :func:`aggregate_over_seeds` (the aggregate row when present, else the
mean over seeds) and :func:`worst_for_maker` (the worst value for the anonymizer's maker over a
zoo's attackers, from each metric's :attr:`Metric.higher_is_better`).

Besides the metrics, two result fields of an attacker zoo (``services.pipeline.zoo``) are defined
here (:data:`RESULT_FIELDS`): :data:`ATTACKER`, the attacker a row was measured by, and
:data:`WORST_CASE`, the per-scenario worst case for the maker over the zoo's attackers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from services import vocab

PROTOCOL_SCENARIO: str | None = None
"""In :attr:`Metric.leaderboard_scenarios`: the protocol's own leaderboard scenario."""

UTILITY_SCENARIO = "utility"
"""The scenario name under which a report's ``utility`` block is stored as result rows."""
UTILITY_BACKEND = "-"
"""The back-end of the utility rows: utility does not depend on the attacker's back-end."""

AGGREGATE_SEED = vocab.AGGREGATE_SEED
"""The seed of a result row that holds a value aggregated over seeds (``<key>_std`` beside it);
defined in ``services.vocab`` (storage reads it there too)."""

N_SEEDS_KEY = "n_seeds"
"""The result row (seed :data:`AGGREGATE_SEED`) holding the number of training seeds averaged."""

NameT = TypeVar("NameT", str, tuple[str, str])
"""What :func:`worst_for_maker` chooses among: attacker names, or (attacker, back-end) pairs."""

PathPart = str | int
"""A step of a :attr:`Metric.path`: a mapping key, or an index into a list (interval bounds)."""


LLR_BACKENDS: frozenset[str] = frozenset({"plda"})
"""Back-ends whose scores are log-likelihood ratios (calibrated evidence), unless a score
normalization rescales them."""

NO_NORMALIZATION = "none"
"""The score normalization that leaves scores as the back-end made them."""


def scores_are_llrs(backend: str, normalization: str = NO_NORMALIZATION) -> bool:
    """Whether ``backend``'s scores under ``normalization`` are log-likelihood ratios: PLDA's,
    unless AS-norm rescaled them (cosine similarities never are)."""
    return backend in LLR_BACKENDS and normalization == NO_NORMALIZATION


def stored_backend(scenario: str, backend: str) -> str:
    """The back-end a (scenario, back-end) value is stored under: the utility rows have one."""
    return UTILITY_BACKEND if scenario == UTILITY_SCENARIO else backend


@dataclass(frozen=True)
class Metric:
    """One reported metric.

    ``higher_is_better`` is from the maker's side: True when a higher value means more privacy
    (or, for utility metrics, more usefulness). ``path`` locates the per-seed value inside a
    ``results.json`` row, or for :data:`UTILITY_METRICS` inside the report's ``utility`` block;
    an integer step indexes a list (an interval's ``[low, high]``). None: computed by the report
    itself (e.g. a best-over-attacks value, stored from the seed summary only). ``digits`` is the
    number of decimals shown.
    """

    key: str
    label: str
    description: str
    unit: str
    higher_is_better: bool
    digits: int
    path: tuple[PathPart, ...] | None = None
    seed_summary: bool = False
    """Averaged over seeds into ``results.json``'s ``summary`` (mean and sample std)."""
    summarized: bool = False
    """Kept in each succeeded job's summary row (what the leaderboard reads)."""
    leaderboard_scenarios: tuple[str | None, ...] = ()
    """One leaderboard column per entry: a scenario name, or :data:`PROTOCOL_SCENARIO`."""
    in_event: bool = False
    """Copied (seed-aggregated) into the payload of a ``job.succeeded`` webhook event."""
    in_table: bool = False
    """A column of the CLI result tables (``unmask evaluate``, ``demo``, ``submit``)."""
    interval: tuple[str, str] | None = None
    """Keys of the metrics holding the lower and upper bound of its 95 % interval."""
    chance_key: str | None = None
    """Key of the metric holding this metric's chance level where that depends on the
    evaluation (e.g. 1/N for a population of N speakers): stored beside it in every row."""
    needs_llr_scores: bool = False
    """Meaningful on log-likelihood-ratio scores only (:func:`scores_are_llrs`): elsewhere it is
    neither computed, stored nor shown (:meth:`applies`)."""

    def applies(self, backend: str, normalization: str = NO_NORMALIZATION) -> bool:
        """Whether this metric applies to the scores of ``backend`` under ``normalization``: THE
        rule the score stage (compute and store it or not) and the pages (show it or not) read."""
        return not self.needs_llr_scores or scores_are_llrs(backend, normalization)

    @property
    def applies_note(self) -> str | None:
        """Where this metric applies, for a page's note; None when it applies to every score."""
        if not self.needs_llr_scores:
            return None
        return (
            f"{self.label} applies to log-likelihood-ratio scores only (the "
            f"{', '.join(sorted(LLR_BACKENDS))} back-end without score normalization)"
        )

    def value_in(self, row: Mapping[str, Any]) -> float | None:
        """This metric's value in a ``results.json`` row, or None when the row lacks it."""
        found = _follow(row, self.path)
        return None if found is _MISSING else _as_number(found)

    def format(self, value: float | None) -> str:
        """``value`` with this metric's digits; an en dash when missing."""
        if value is None:
            return "–"
        return f"{value:.{self.digits}f}"

    @property
    def std_key(self) -> str:
        """The key of the standard deviation over seeds (stored with the seed-``-1`` mean)."""
        return f"{self.key}_std"

    @property
    def direction(self) -> str:
        """``higher`` or ``lower``: which way means more privacy (or utility)."""
        return "higher" if self.higher_is_better else "lower"

    def is_worse(self, a: float, b: float) -> bool:
        """Whether ``a`` is worse than ``b`` for the maker (less privacy or utility)."""
        return a < b if self.higher_is_better else a > b


_MISSING = object()


def _follow(container: Any, path: tuple[PathPart, ...] | None) -> Any:
    """The value at ``path`` inside ``container``; ``_MISSING`` when a step is absent."""
    if path is None:
        return _MISSING
    value = container
    for part in path:
        if isinstance(part, int):
            if not isinstance(value, list | tuple) or not -len(value) <= part < len(value):
                return _MISSING
        elif not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _as_number(value: Any, *, flags: bool = False) -> float | None:
    """A stored metric value: finite numbers as float, anything else None; booleans are 1 / 0
    with ``flags`` (the utility block's ``usable``), else not a value."""
    if isinstance(value, bool):
        return (1.0 if value else 0.0) if flags else None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


@dataclass(frozen=True)
class ResultField:
    """A field of ``results.json`` and the result rows that is not a metric value."""

    key: str
    description: str


ATTACKER = ResultField(
    key="attacker",
    description=(
        "The attacker of an attacker zoo (config `attackers`) a result row, summary entry and "
        "training run belong to; the database's `results.attacker` and the API's result rows "
        "(`baseline` when the job ran one attacker; results.json rows then carry no `attacker`)."
    ),
)
WORST_CASE = ResultField(
    key="worst_case",
    description=(
        "results.json and the API's job results, attacker zoos only: per scenario, the attacker "
        "and back-end with the lowest EER (mean over seeds) and, per seed-summary metric, the "
        "value worst for the maker (lowest where higher is better, else highest) with the "
        "attacker and back-end that achieved it. The leaderboard and the CLI verdict read it."
    ),
)
RESULT_FIELDS: tuple[ResultField, ...] = (ATTACKER, WORST_CASE)
"""The result fields of an attacker zoo (``docs/metrics.md`` lists them under the metrics)."""


EER = Metric(
    key="eer_percent",
    label="EER %",
    description=(
        "Equal error rate of the attacker (ROC convex hull), mean over seeds. 50 % = chance; "
        "higher = more privacy."
    ),
    unit="%",
    higher_is_better=True,
    digits=1,
    path=("eer_percent",),
    seed_summary=True,
    summarized=True,
    leaderboard_scenarios=(PROTOCOL_SCENARIO, "ignorant", "lazy-informed"),
    in_event=True,
    in_table=True,
    interval=("eer_ci95_percent_low", "eer_ci95_percent_high"),
)
EER_FEMALE = Metric(
    key="eer_per_gender_percent_f",
    label="EER % (female)",
    description="EER of the attacker on female speakers' trials, mean over seeds.",
    unit="%",
    higher_is_better=True,
    digits=1,
    path=("eer_per_gender_percent", "f"),
    seed_summary=True,
    summarized=True,
    leaderboard_scenarios=(PROTOCOL_SCENARIO,),
)
EER_MALE = Metric(
    key="eer_per_gender_percent_m",
    label="EER % (male)",
    description="EER of the attacker on male speakers' trials, mean over seeds.",
    unit="%",
    higher_is_better=True,
    digits=1,
    path=("eer_per_gender_percent", "m"),
    seed_summary=True,
    summarized=True,
    leaderboard_scenarios=(PROTOCOL_SCENARIO,),
)
EER_CI95_LOW = Metric(
    key="eer_ci95_percent_low",
    label="EER 95 % low",
    description="Lower bound of the EER's 95 % speaker-bootstrap interval.",
    unit="%",
    higher_is_better=True,
    digits=1,
    path=("eer_ci95_percent", 0),
    summarized=True,
)
EER_CI95_HIGH = Metric(
    key="eer_ci95_percent_high",
    label="EER 95 % high",
    description="Upper bound of the EER's 95 % speaker-bootstrap interval.",
    unit="%",
    higher_is_better=True,
    digits=1,
    path=("eer_ci95_percent", 1),
    summarized=True,
)
PER_SPEAKER_EER_MEAN = Metric(
    key="per_speaker_eer_mean_percent",
    label="per-speaker EER %",
    description=(
        "Mean over trial speakers of each speaker's EER (its target trials vs all non-target "
        "trials of its list), each clipped at 50 %; higher = more privacy."
    ),
    unit="%",
    higher_is_better=True,
    digits=1,
    path=("per_speaker_eer", "mean_percent"),
    seed_summary=True,
    summarized=True,
    in_event=True,
)
PER_SPEAKER_EER_WORST_DECILE = Metric(
    key="per_speaker_eer_worst_decile_percent",
    label="worst-decile EER %",
    description=(
        "Mean per-speaker EER of the tenth of trial speakers (rounded up) with the lowest EER: the "
        "speakers easiest to recognize. Higher = more privacy."
    ),
    unit="%",
    higher_is_better=True,
    digits=1,
    path=("per_speaker_eer", "worst_decile_percent"),
    seed_summary=True,
    summarized=True,
    in_event=True,
)
DETECTION_RATE_FAR_1 = Metric(
    key="detection_rate_far1_percent",
    label="DR @ FAR 1 %",
    description=(
        "Share of target trials the attacker accepts at a threshold with at most 1 % false "
        "alarms (none below 100 non-targets); lower = more privacy."
    ),
    unit="%",
    higher_is_better=False,
    digits=1,
    path=("detection_rate", "far_1_percent"),
    seed_summary=True,
    summarized=True,
    in_event=True,
)
DETECTION_RATE_FAR_0_1 = Metric(
    key="detection_rate_far0p1_percent",
    label="DR @ FAR 0.1 %",
    description=(
        "Share of target trials accepted at a threshold with at most 0.1 % false alarms (none "
        "below 1000 non-targets); lower = more privacy."
    ),
    unit="%",
    higher_is_better=False,
    digits=1,
    path=("detection_rate", "far_0_1_percent"),
    seed_summary=True,
    summarized=True,
    in_event=True,
)
CLLR = Metric(
    key="cllr_bits",
    label="Cllr",
    description=(
        "Log-likelihood-ratio cost of the attacker's raw scores (calibration included); only "
        "where the scores are log-likelihood ratios (PLDA without score normalization)."
    ),
    unit="bits",
    higher_is_better=True,
    digits=3,
    path=("cllr_bits",),
    seed_summary=True,
    summarized=True,
    needs_llr_scores=True,
)
MIN_CLLR = Metric(
    key="min_cllr_bits",
    label="min Cllr",
    description="Minimum Cllr after optimal (PAV) calibration; 1 bit = no speaker information.",
    unit="bits",
    higher_is_better=True,
    digits=3,
    path=("min_cllr_bits",),
    seed_summary=True,
    summarized=True,
    leaderboard_scenarios=(PROTOCOL_SCENARIO,),
    in_event=True,
    in_table=True,
)
LINKABILITY = Metric(
    key="linkability",
    label="Linkability",
    description="Global linkability D_sys in [0, 1] (Gomez-Barrero et al.); 0 = unlinkable.",
    unit="",
    higher_is_better=False,
    digits=3,
    path=("linkability",),
    seed_summary=True,
    summarized=True,
    leaderboard_scenarios=(PROTOCOL_SCENARIO,),
    in_event=True,
    in_table=True,
)
SRD_MEAN_DISCLOSURE = Metric(
    key="srd_mean_disclosure_bits",
    label="SRD MeanD",
    description="Similarity rank disclosure: mean disclosure over inputs; 0 bits = chance.",
    unit="bits",
    higher_is_better=False,
    digits=3,
    path=("srd", "empirical", "mean_disclosure_bits"),
    seed_summary=True,
    summarized=True,
    leaderboard_scenarios=(PROTOCOL_SCENARIO,),
    in_event=True,
    in_table=True,
)
SRD_IDENTIFICATION_RATE = Metric(
    key="srd_identification_rate_percent",
    label="IdR %",
    description="SRD identification rate: share of inputs whose speaker ranks first (chance 1/N).",
    unit="%",
    higher_is_better=False,
    digits=1,
    path=("srd", "empirical", "identification_rate_percent"),
    seed_summary=True,
    summarized=True,
    leaderboard_scenarios=(PROTOCOL_SCENARIO,),
    in_event=True,
    in_table=True,
)
LEGAL_PATH = ("legal", "headline")
"""Where a row's legal-metrics block (``services.metrics.legal``) keeps its headline values."""

LINKABILITY_TOP1 = Metric(
    key="linkability_top1_percent",
    label="Top-1 link %",
    description=(
        "Legal top-1 linkability (Vauquier et al. 2025) at the headline point (N speakers, "
        "conversations of L utterances): share of speakers whose test conversation is closer to "
        "their own enrollment than to any other of N; chance 1/N; lower = more privacy."
    ),
    unit="%",
    higher_is_better=False,
    digits=1,
    path=(*LEGAL_PATH, "linkability_top1_percent"),
    seed_summary=True,
    summarized=True,
    leaderboard_scenarios=(PROTOCOL_SCENARIO,),
    in_event=True,
    in_table=True,
    chance_key="linkability_top1_chance_percent",
)
SINGLING_OUT = Metric(
    key="singling_out_percent",
    label="Singling out %",
    description=(
        "Legal predicate singling out (Vauquier et al. 2025) at the headline point: share of "
        "calibrated predicates that fire on exactly one of N speakers' conversations; chance "
        "(1 - 1/N)^(N-1), about e^-1 = 36.8 %; lower = more privacy."
    ),
    unit="%",
    higher_is_better=False,
    digits=1,
    path=(*LEGAL_PATH, "singling_out_percent"),
    seed_summary=True,
    summarized=True,
    leaderboard_scenarios=(PROTOCOL_SCENARIO,),
    in_event=True,
    in_table=True,
    chance_key="singling_out_chance_percent",
)
LINKABILITY_TOP1_CHANCE = Metric(
    key="linkability_top1_chance_percent",
    label="Top-1 link chance %",
    description="Chance level of the top-1 linkability at the headline point: 100 / N.",
    unit="%",
    higher_is_better=False,
    digits=1,
    path=(*LEGAL_PATH, "linkability_top1_chance_percent"),
    seed_summary=True,
    summarized=True,
    in_event=True,
)
SINGLING_OUT_CHANCE = Metric(
    key="singling_out_chance_percent",
    label="Singling out chance %",
    description=(
        "Chance level of singling out at the headline point: 100 (1 - 1/N)^(N-1), a predicate "
        "firing on each of N conversations with probability 1/N."
    ),
    unit="%",
    higher_is_better=False,
    digits=1,
    path=(*LEGAL_PATH, "singling_out_chance_percent"),
    seed_summary=True,
    summarized=True,
    in_event=True,
)
ZEBRA_EXPECTED_DISCLOSURE = Metric(
    key="zebra_expected_disclosure_bits",
    label="ZEBRA D_ECE",
    description="ZEBRA expected disclosure (empirical cross-entropy gain); 0 bits = none.",
    unit="bits",
    higher_is_better=False,
    digits=3,
    path=("zebra", "expected_disclosure_bits"),
    summarized=True,
)
PRERESTORE_EER = Metric(
    key="prerestore_eer_percent",
    label="Pre-restoration EER %",
    description=(
        "Ignorant attacker's lowest EER over the pre-restoration attacks (Liu et al.), when run; "
        "higher = more privacy."
    ),
    unit="%",
    higher_is_better=True,
    digits=1,
    summarized=True,
    leaderboard_scenarios=("ignorant",),
)

# --- utility (docs/utility.md): values of the report's ``utility`` block, path from the block ----

WER_ORIGINAL = Metric(
    key="wer_original_percent",
    label="WER % original",
    description="Word error rate of the utility ASR on the ORIGINAL trial speech (the reference).",
    unit="%",
    higher_is_better=False,
    digits=1,
    path=("wer", "wer_original_percent"),
    summarized=True,
)
WER_ANONYMIZED = Metric(
    key="wer_anonymized_percent",
    label="WER % anonymized",
    description="Word error rate of the utility ASR (trained on original speech) on the "
    "anonymized trial speech; lower = more intelligible.",
    unit="%",
    higher_is_better=False,
    digits=1,
    path=("wer", "wer_anonymized_percent"),
    summarized=True,
)
WER_INCREASE = Metric(
    key="wer_increase_percent",
    label="WER increase",
    description="Anonymized minus original WER (percentage points), with a speaker-level "
    "bootstrap interval; the protocol's utility bound applies to it. Lower = more useful.",
    unit="points",
    higher_is_better=False,
    digits=1,
    path=("wer", "wer_increase_percent"),
    summarized=True,
    leaderboard_scenarios=(UTILITY_SCENARIO,),
    in_event=True,
    interval=("wer_increase_ci95_percent_low", "wer_increase_ci95_percent_high"),
)
WER_INCREASE_CI95_LOW = Metric(
    key="wer_increase_ci95_percent_low",
    label="WER increase 95 % low",
    description="Lower bound of the WER increase's 95 % speaker-bootstrap interval (points).",
    unit="points",
    higher_is_better=False,
    digits=1,
    path=("wer", "wer_increase_ci95_percent", 0),
    summarized=True,
)
WER_INCREASE_CI95_HIGH = Metric(
    key="wer_increase_ci95_percent_high",
    label="WER increase 95 % high",
    description="Upper bound of the WER increase's 95 % speaker-bootstrap interval (points).",
    unit="points",
    higher_is_better=False,
    digits=1,
    path=("wer", "wer_increase_ci95_percent", 1),
    summarized=True,
)
PITCH_CORRELATION = Metric(
    key="pitch_correlation",
    label="ρF0",
    description="Pitch correlation of original and anonymized trial speech (Pearson, frames "
    "voiced in both; VoicePrivacy 2022), mean over utterances. 1 = intonation kept.",
    unit="",
    higher_is_better=True,
    digits=2,
    path=("pitch_correlation", "mean"),
    summarized=True,
    leaderboard_scenarios=(UTILITY_SCENARIO,),
    in_event=True,
)
VOICE_DISTINCTIVENESS = Metric(
    key="gvd_db",
    label="GVD dB",
    description="Gain of voice distinctiveness (VoicePrivacy 2020/2022): 0 dB = speakers as "
    "distinct as in the original, negative = voices made more alike.",
    unit="dB",
    higher_is_better=True,
    digits=1,
    path=("voice_distinctiveness", "gvd_db"),
    summarized=True,
    leaderboard_scenarios=(UTILITY_SCENARIO,),
    in_event=True,
)
USABLE_SPEECH = Metric(
    key="usable_speech",
    label="Usable speech",
    description="1 when the anonymized speech passed the degenerate-output guard (not silence, "
    "noise, one voice for all, clipping, no words), else 0; unusable results rank last.",
    unit="",
    higher_is_better=True,
    digits=0,
    path=("usable_speech", "usable"),
    summarized=True,
    in_event=True,
)

UTILITY_METRICS: tuple[Metric, ...] = (
    WER_ORIGINAL,
    WER_ANONYMIZED,
    WER_INCREASE,
    WER_INCREASE_CI95_LOW,
    WER_INCREASE_CI95_HIGH,
    PITCH_CORRELATION,
    VOICE_DISTINCTIVENESS,
    USABLE_SPEECH,
)
"""Metrics of the ``utility`` block (one value per job, stored under :data:`UTILITY_SCENARIO`)."""


def utility_values(block: Mapping[str, Any]) -> dict[str, float | None]:
    """The utility metrics' values in a report's ``utility`` block (booleans as 1 / 0; None when
    missing), one per utility metric of the catalogue."""
    out: dict[str, float | None] = {}
    for m in utility_metrics():
        found = _follow(block, m.path)
        out[m.key] = None if found is _MISSING else _as_number(found, flags=True)
    return out


METRICS: tuple[Metric, ...] = (
    EER,
    EER_CI95_LOW,
    EER_CI95_HIGH,
    EER_FEMALE,
    EER_MALE,
    PER_SPEAKER_EER_MEAN,
    PER_SPEAKER_EER_WORST_DECILE,
    DETECTION_RATE_FAR_1,
    DETECTION_RATE_FAR_0_1,
    CLLR,
    MIN_CLLR,
    LINKABILITY,
    SRD_MEAN_DISCLOSURE,
    SRD_IDENTIFICATION_RATE,
    LINKABILITY_TOP1,
    LINKABILITY_TOP1_CHANCE,
    SINGLING_OUT,
    SINGLING_OUT_CHANCE,
    ZEBRA_EXPECTED_DISCLOSURE,
    PRERESTORE_EER,
    *UTILITY_METRICS,
)
"""The catalogue, in display order. Read it through the functions below."""

HEADLINE: Metric = EER
"""The metric a protocol ranks by unless its config names another."""


def all_metrics() -> tuple[Metric, ...]:
    """Every catalogued metric, in display order."""
    return METRICS


def metric(key: str) -> Metric:
    """The catalogued metric ``key``; KeyError naming the known keys otherwise."""
    for m in METRICS:
        if m.key == key:
            return m
    raise KeyError(f"unknown metric {key!r}; known: {', '.join(m.key for m in METRICS)}")


def is_catalogued(key: str) -> bool:
    """Whether ``key`` names a catalogued metric."""
    return any(m.key == key for m in METRICS)


def result_values(row: Mapping[str, Any]) -> Iterator[tuple[str, float | None]]:
    """One ``(key, value)`` per catalogued metric found in a ``results.json`` score row (its
    ``path`` present; value None when present but null or not finite); metrics of the ``utility``
    block and those without a path are not in rows. Uncatalogued detail is not yielded: it stays
    in ``results.json``. The key is the same at every seed and in the aggregate
    (:func:`summary_values`)."""
    for m in METRICS:
        if m in UTILITY_METRICS:
            continue
        found = _follow(row, m.path)
        if found is not _MISSING:
            yield m.key, _as_number(found)


def summary_values(entry: Mapping[str, Any]) -> Iterator[tuple[str, float | None]]:
    """The aggregate ``(key, value)`` pairs of one seed-summary entry of ``results.json``: per
    catalogued metric it carries, the mean under its key and the sample standard deviation under
    :attr:`Metric.std_key`; and :data:`N_SEEDS_KEY`. A metric summarized as null yields None."""
    if isinstance(entry.get(N_SEEDS_KEY), int | float):
        yield N_SEEDS_KEY, float(entry[N_SEEDS_KEY])
    for m in METRICS:
        if m.key not in entry:
            continue
        value = entry[m.key]
        if isinstance(value, Mapping):
            yield m.key, _as_number(value.get("mean"))
            yield m.std_key, _as_number(value.get("std"))
        elif value is None:
            yield m.key, None


def aggregate_over_seeds(aggregate: float | None, per_seed: Iterable[float | None]) -> float | None:
    """A metric's value over seeds: the stored aggregate (seed :data:`AGGREGATE_SEED`) when
    present, else the mean of the present per-seed values (None when there are none).

    The leaderboard's SQL computes both parts per group (the mean of the aggregate rows, the mean
    of the per-seed rows) and passes the latter here as a one-element ``per_seed``.
    """
    if aggregate is not None and math.isfinite(aggregate):
        return float(aggregate)
    present = [float(v) for v in per_seed if v is not None and math.isfinite(v)]
    return sum(present) / len(present) if present else None


def worst_for_maker(key: str, values: Mapping[NameT, float | None]) -> NameT | None:
    """Which entry of ``values`` (e.g. attacker name -> value of metric ``key``) is worst for the
    anonymizer's maker: the lowest where higher is better (EER, min Cllr), else the highest
    (disclosure, detection rates). Missing values are ignored; ties go to the first name in
    sorted order; None when no value is present. ``key`` must be catalogued."""
    m = metric(key)
    worst: NameT | None = None
    for name in sorted(values):
        value = values[name]
        if value is None or not math.isfinite(value):
            continue
        current = values[worst] if worst is not None else None
        if current is None or m.is_worse(value, current):
            worst = name
    return worst


def seed_summary_metrics() -> tuple[Metric, ...]:
    """Metrics averaged over seeds into ``results.json``'s summary."""
    return tuple(m for m in METRICS if m.seed_summary)


def utility_metrics() -> tuple[Metric, ...]:
    """The metrics of a report's ``utility`` block."""
    return tuple(m for m in METRICS if m in UTILITY_METRICS)


def summarized_metrics() -> tuple[Metric, ...]:
    """Metrics kept in job summaries (what leaderboards read without scanning results)."""
    return tuple(m for m in METRICS if m.summarized)


def leaderboard_metrics() -> tuple[Metric, ...]:
    """Metrics shown as leaderboard columns (at least one scenario)."""
    return tuple(m for m in METRICS if m.leaderboard_scenarios)


def event_metrics() -> tuple[Metric, ...]:
    """Metrics copied into ``job.succeeded`` webhook payloads."""
    return tuple(m for m in METRICS if m.in_event)


def table_metrics() -> tuple[Metric, ...]:
    """Columns of the CLI result tables."""
    return tuple(m for m in METRICS if m.in_table)


def summarize_seed_values(rows: list[Mapping[str, Any]]) -> dict[str, dict[str, float] | None]:
    """``{key: {"mean", "std"}}`` over ``rows`` (one per seed) for every seed-summary metric.

    The standard deviation is the sample one (ddof 1; 0 for a single seed). A metric no row
    carries (it does not apply, :meth:`Metric.applies`, or was not asked for) is left out, as it
    is from the rows: one name at every seed and in the aggregate. A metric the rows carry without
    a value maps to None.
    """
    out: dict[str, dict[str, float] | None] = {}
    for m in seed_summary_metrics():
        carried = [r for r in rows if _follow(r, m.path) is not _MISSING]
        if not carried:
            continue
        present = [v for v in (m.value_in(r) for r in carried) if v is not None]
        if not present:
            out[m.key] = None
            continue
        values = np.asarray(present, dtype=float)
        std = float(values.std(ddof=1)) if values.size > 1 else 0.0
        out[m.key] = {"mean": float(values.mean()), "std": std}
    return out
