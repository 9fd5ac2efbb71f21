"""Two submissions of one protocol side by side: every catalogued metric of their leaderboard
jobs (per scenario and back-end, aggregated like the leaderboard), the difference b - a and
which side is better for the maker, their DET curves and their utility.

Each side is the submission's leaderboard job under the protocol (its latest succeeded job
whose results the viewer may see). A submission without one there, e.g. an archive made for
another protocol or one evaluated under another protocol only, is refused
(:class:`ComparisonError`, 4xx naming it).

Where both jobs kept their trials (``services.scoring.trial_scores``: every score with its
speakers, one artifact per result row) on the same trial grid, each (scenario, back-end) gets
the EER difference's paired speaker-bootstrap interval (one draw of speakers weights both jobs'
trials, so what they share cancels) and the per-speaker EERs of both jobs for a scatter plot.
Without them (a job reused a score stage from before trials were kept; different trial grids)
the interval is None and ``paired_notes`` says why, rather than an interval computed on
unpaired data.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from services.metrics import catalogue, paired_bootstrap_eer_difference
from services.platform.leaderboard import (
    det_curves_of,
    job_metric_values,
    representative_job,
)
from services.platform.phases import revealed_jobs_clause
from services.results.keys import ResultKey
from services.scoring import ScoredTrials, eer_report, per_speaker_eer_report
from services.scoring.trial_scores import TRIALS_DIR, load_scored_trials, speaker_trials
from services.storage.blob_interface import BlobStore
from services.storage.errors import ConflictError
from services.storage.models import Artifact, Job, ProtocolRecord, Submission
from services.vocab import HEADLINE_SCENARIOS, REFERENCE_SCENARIO

PAIRED_RESAMPLES = 1000
"""Speaker resamples of the paired bootstrap (seeded: the same request gives the same interval)."""

PAIRED_CONFIDENCE = 0.95

SideTrials = tuple[tuple[str, tuple[tuple[int, str, str], ...]], ...]
"""One job's kept trials of a (scenario, back-end), hashable: ``((attacker, ((seed, blob key,
sha256), ...)), ...)``."""


class ComparisonError(ConflictError):
    """The two submissions cannot be compared under this protocol (409 naming why)."""


@dataclass(frozen=True)
class Side:
    """One compared submission and the job that stands for it."""

    submission_id: int
    submission_name: str
    team_slug: str
    job_id: int


@dataclass(frozen=True)
class MetricComparison:
    """One metric in one (scenario, back-end): both values, ``difference`` = b - a, and
    ``better`` ("a", "b", "equal" or None when a value is missing), from the maker's side."""

    metric: str
    label: str
    unit: str
    scenario: str
    backend: str
    a: float | None
    b: float | None
    difference: float | None
    better: str | None
    higher_is_better: bool
    digits: int
    paired_interval: tuple[float, float] | None = None


@dataclass(frozen=True)
class PerSpeakerPairs:
    """Per-speaker EER (%) of both jobs over the speakers they share, in one order (mean over
    seeds, of the attacker whose EER the comparison shows)."""

    speakers: list[str]
    a: list[float]
    b: list[float]


@dataclass
class Comparison:
    """Everything the compare page and its JSON twin show."""

    protocol_id: int
    a: Side
    b: Side
    metrics: list[MetricComparison] = field(default_factory=list)
    det_curves: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``{"<scenario>|<backend>": {"a": curve, "b": curve}}`` (curve: pfa, pmiss, eer, seed)."""
    per_speaker: dict[str, PerSpeakerPairs] = field(default_factory=dict)
    """``{"<scenario>|<backend>": per-speaker EERs of both}`` where both jobs kept trials."""
    paired_notes: dict[str, str] = field(default_factory=dict)
    """``{"<scenario>|<backend>": why there is no paired interval}``."""
    trial_refs: dict[str, tuple[SideTrials | None, SideTrials | None]] = field(default_factory=dict)
    """``{"<scenario>|<backend>": (a's kept trials, b's)}`` (None: kept none): what the paired
    interval is computed from (:func:`paired_result`), read with the rows."""

    @property
    def privacy(self) -> list[MetricComparison]:
        """The attacker metrics (every scenario but utility)."""
        return [m for m in self.metrics if m.scenario != catalogue.UTILITY_SCENARIO]

    @property
    def utility(self) -> list[MetricComparison]:
        """The utility metrics (ASR WER, usable speech, ...)."""
        return [m for m in self.metrics if m.scenario == catalogue.UTILITY_SCENARIO]

    @property
    def privacy_headline_first(self) -> list[MetricComparison]:
        """:attr:`privacy` with the headline scenarios first (``HEADLINE_SCENARIOS``' order,
        the strongest attacker first), then original speech and any other."""
        order = (*HEADLINE_SCENARIOS, REFERENCE_SCENARIO)

        def rank(m: MetricComparison) -> int:
            return order.index(m.scenario) if m.scenario in order else len(order)

        return sorted(self.privacy, key=rank)

    @property
    def headline(self) -> MetricComparison | None:
        """The EER comparison a verdict reads: the first headline scenario where both sides
        have an EER; among its back-ends one with a paired interval first, then by name."""
        for scenario in HEADLINE_SCENARIOS:
            rows = [
                m
                for m in self.privacy
                if m.scenario == scenario
                and m.metric == catalogue.EER.key
                and m.difference is not None
            ]
            if rows:
                return min(rows, key=lambda m: (m.paired_interval is None, m.backend))
        return None


def _side(
    session: Session,
    protocol: ProtocolRecord,
    submission: Submission,
    *,
    viewer_team_id: int | None,
    include_all: bool,
) -> Side:
    if submission.protocol_id is not None and submission.protocol_id != protocol.id:
        raise ComparisonError(
            f"submission {submission.id} belongs to protocol {submission.protocol_id}, not "
            f"{protocol.id}; compare submissions of one protocol"
        )
    job = representative_job(
        session,
        submission.id,
        protocol.id,
        viewer_team_id=viewer_team_id,
        include_all=include_all,
    )
    if job is None:
        other = session.scalar(
            # The rows' visibility rule: a hidden phase's job is not named either.
            select(Job.protocol_id).where(
                Job.submission_id == submission.id,
                Job.protocol_id != protocol.id,
                revealed_jobs_clause(viewer_team_id=viewer_team_id, include_all=include_all),
            )
        )
        where = f"; it was evaluated under protocol {other}" if other is not None else ""
        raise ComparisonError(
            f"submission {submission.id} has no succeeded job under protocol {protocol.id}"
            f"{where}; compare submissions of one protocol"
        )
    return Side(submission.id, submission.name, submission.team.slug, job.id)


def _better(metric: catalogue.Metric, a: float | None, b: float | None) -> str | None:
    if a is None or b is None:
        return None
    if round(a, metric.digits) == round(b, metric.digits):
        return "equal"
    return "b" if (b > a) == metric.higher_is_better else "a"


TrialSets = dict[str, dict[str, dict[int, tuple[str, str]]]]
"""``{"<scenario>|<backend>": {attacker: {seed: (blob key, sha256)}}}`` of one job's trials."""


def _trial_sets(session: Session, job_id: int) -> TrialSets:
    """The trials a job kept (artifacts ``jobs/<id>/trials/<attacker>/<scenario>/<backend>/
    seed<n>.npz``)."""
    prefix = f"jobs/{job_id}/{TRIALS_DIR}/"
    out: TrialSets = {}
    query = select(Artifact.key, Artifact.sha256).where(
        Artifact.job_id == job_id, Artifact.key.startswith(prefix, autoescape=True)
    )
    for key, sha in session.execute(query):
        parts = key.removeprefix(prefix).split("/")
        if len(parts) != 4 or not (parts[3].startswith("seed") and parts[3].endswith(".npz")):
            continue
        attacker, scenario, backend, name = parts
        seed = name.removeprefix("seed").removesuffix(".npz")
        if seed.lstrip("-").isdigit():
            pair = ResultKey(scenario, backend).format()
            out.setdefault(pair, {}).setdefault(attacker, {})[int(seed)] = (
                key,
                sha,
            )
    return out


@dataclass(frozen=True)
class PairedResult:
    """The paired EER interval of b - a (percentage points) and the per-speaker EERs of one
    (scenario, back-end), or ``note``: why there are none."""

    interval: tuple[float, float] | None
    per_speaker: PerSpeakerPairs | None
    note: str | None

    def swapped(self) -> PairedResult:
        """The same result with a and b exchanged (the interval of a - b)."""
        interval = None if self.interval is None else (-self.interval[1], -self.interval[0])
        pairs = self.per_speaker
        if pairs is not None:
            pairs = PerSpeakerPairs(pairs.speakers, pairs.b, pairs.a)
        return PairedResult(interval, pairs, self.note)


def _side_trials(sets: Mapping[str, Mapping[int, tuple[str, str]]]) -> SideTrials:
    return tuple(
        (attacker, tuple((seed, *by_seed[seed]) for seed in sorted(by_seed)))
        for attacker, by_seed in sorted(sets.items())
    )


def missing_trials(side_a: SideTrials | None, side_b: SideTrials | None) -> PairedResult | None:
    """The result without any computation when a side kept no trials, else None."""
    if side_a and side_b:
        return None
    missing = " and ".join(n for n, s in (("a", side_a), ("b", side_b)) if not s)
    return PairedResult(None, None, f"no paired interval: job {missing} kept no per-trial scores")


def unordered(side_a: SideTrials, side_b: SideTrials) -> tuple[SideTrials, SideTrials, bool]:
    """The pair in one canonical order (a comparison of b with a reuses a with b's work) and
    whether it was swapped."""
    return (side_a, side_b, False) if side_a <= side_b else (side_b, side_a, True)


def paired_result(
    store: BlobStore, side_a: SideTrials | None, side_b: SideTrials | None
) -> PairedResult:
    """The paired EER interval and the per-speaker EERs of one (scenario, back-end), computed
    here (about a second of CPU for a real protocol: callers serving requests use
    :class:`~services.platform.comparison.background.PairedResults`, which computes it off the
    request path and caches it)."""
    missing = missing_trials(side_a, side_b)
    if missing is not None:
        return missing
    assert side_a is not None and side_b is not None
    first, second, swapped = unordered(side_a, side_b)
    result = paired_from_bytes(first, second, read_trial_bytes(store, first, second))
    return result.swapped() if swapped else result


def read_trial_bytes(store: BlobStore, *sides: SideTrials) -> dict[str, bytes]:
    """The kept trial sets of ``sides`` as stored: ``{sha256: bytes}`` (each content once)."""
    wanted = {sha: key for side in sides for _, seeds in side for _, key, sha in seeds}
    return {sha: store.get_bytes(key) for sha, key in wanted.items()}


def apply_paired(comparison: Comparison, key: str, paired: PairedResult) -> None:
    """Put one (scenario, back-end)'s paired result into ``comparison``."""
    if paired.note is not None:
        comparison.paired_notes[key] = paired.note
    if paired.per_speaker is not None and paired.per_speaker.speakers:
        comparison.per_speaker[key] = paired.per_speaker
    if paired.interval is not None:
        eer_key = ResultKey.parse(key).with_metric(catalogue.EER.key)
        comparison.metrics = [
            dataclasses.replace(m, paired_interval=paired.interval)
            if ResultKey(m.scenario, m.backend, m.metric) == eer_key
            else m
            for m in comparison.metrics
        ]


def paired_from_bytes(
    side_a: SideTrials, side_b: SideTrials, blobs: Mapping[str, bytes]
) -> PairedResult:
    """The paired result of a and b from their kept trial sets' bytes (``blobs``: sha256 ->
    bytes, :func:`read_trial_bytes`): pure CPU work on plain data, so a server runs it in a
    child process (:class:`services.cpu_pool.CpuPool`).

    Each side is the attacker its EER comes from (lowest mean EER over seeds, the leaderboard's
    worst case); its seeds' EERs are averaged in every resample. Choosing the attacker on the
    full sample rather than in every resample keeps the cost to one attacker per side.
    """
    parsed = {sha: load_scored_trials(data) for sha, data in blobs.items()}
    loaded = [
        {attacker: [parsed[sha] for _, _key, sha in seeds] for attacker, seeds in side}
        for side in (side_a, side_b)
    ]
    grids = {grid for side in loaded for seeds in side.values() for _, grid in seeds}
    if len(grids) != 1:
        return PairedResult(None, None, "no paired interval: the two jobs scored different trials")
    shown = [_shown_attacker(side) for side in loaded]
    try:
        ci = paired_bootstrap_eer_difference(
            [[speaker_trials(scored) for scored, _ in shown[0]]],
            [[speaker_trials(scored) for scored, _ in shown[1]]],
            n_resamples=PAIRED_RESAMPLES,
            confidence=PAIRED_CONFIDENCE,
        )
    except ValueError as exc:
        return PairedResult(None, None, f"no paired interval: {exc}")
    interval = None if not math.isfinite(ci.low) else (ci.low, ci.high)
    return PairedResult(interval, _per_speaker_pairs(shown), None)


def _shown_attacker(
    side: Mapping[str, list[tuple[ScoredTrials, str]]],
) -> list[tuple[ScoredTrials, str]]:
    """The seeds of the attacker whose EER a side shows: the lowest mean EER over seeds."""
    return min(
        side.values(),
        key=lambda seeds: float(np.mean([eer_report(s).eer_percent for s, _ in seeds])),
    )


def _per_speaker_pairs(shown: list[list[tuple[ScoredTrials, str]]]) -> PerSpeakerPairs:
    """Per-speaker EER of each side's shown attacker, mean over seeds, over the speakers both
    sides have."""
    by_side: list[dict[str, float]] = []
    for seeds in shown:
        values: dict[str, list[float]] = {}
        for scored, _ in seeds:
            report = per_speaker_eer_report(scored)
            for speaker, eer in zip(report.speaker_ids, report.eer_percent, strict=True):
                values.setdefault(str(speaker), []).append(float(eer))
        by_side.append({k: float(np.mean(v)) for k, v in values.items()})
    speakers = sorted(set(by_side[0]) & set(by_side[1]))
    return PerSpeakerPairs(
        speakers, [by_side[0][k] for k in speakers], [by_side[1][k] for k in speakers]
    )


def compare_submissions(
    session: Session,
    *,
    protocol: ProtocolRecord,
    a: Submission,
    b: Submission,
    viewer_team_id: int | None = None,
    include_all: bool = False,
    store: BlobStore | None = None,
) -> Comparison:
    """Submissions ``a`` and ``b`` (both visible to the caller) under ``protocol``.

    ``store``: the blob store holding the jobs' kept trials, read and the paired intervals
    computed here; None = no paired intervals and no per-speaker EERs, only ``trial_refs`` (a
    server computes them after closing its session, :func:`paired_result`)."""
    if a.id == b.id:
        raise ComparisonError(f"a and b are the same submission ({a.id}); pick two")
    sides = [
        _side(session, protocol, s, viewer_team_id=viewer_team_id, include_all=include_all)
        for s in (a, b)
    ]
    side_a, side_b = sides
    values = job_metric_values(session, [side_a.job_id, side_b.job_id])
    va, vb = values[side_a.job_id], values[side_b.job_id]
    value_keys = {k for s in (*va, *vb) if (k := ResultKey.parse_value_key(s)) is not None}
    comparison = Comparison(protocol_id=protocol.id, a=side_a, b=side_b)
    order = {m.key: i for i, m in enumerate(catalogue.all_metrics())}
    for value_key in sorted(
        value_keys, key=lambda k: (k.scenario, k.backend, order.get(str(k.metric), 0))
    ):
        scenario, backend, key = value_key.scenario, value_key.backend, str(value_key.metric)
        if not catalogue.is_catalogued(key):
            continue  # *_std, n_seeds, interval bounds: shown through their metric
        metric = catalogue.metric(key)
        stored = value_key.format()
        x, y = va.get(stored), vb.get(stored)
        comparison.metrics.append(
            MetricComparison(
                metric=key,
                label=metric.label,
                unit=metric.unit,
                scenario=scenario,
                backend=backend,
                a=x,
                b=y,
                difference=None if x is None or y is None else y - x,
                better=_better(metric, x, y),
                higher_is_better=metric.higher_is_better,
                digits=metric.digits,
            )
        )
    keys = {ResultKey(m.scenario, m.backend).format() for m in comparison.privacy}
    trials = [_trial_sets(session, side.job_id) for side in (side_a, side_b)]
    for key in sorted(keys):
        sets_a, sets_b = (t.get(key) for t in trials)
        refs = (_side_trials(sets_a) if sets_a else None, _side_trials(sets_b) if sets_b else None)
        comparison.trial_refs[key] = refs
        if store is None:
            comparison.paired_notes[key] = "no paired interval: no blob store to read trials from"
        else:
            apply_paired(comparison, key, paired_result(store, *refs))
    for key in sorted(keys):
        curves = det_curves_of(session, [side_a.job_id, side_b.job_id], key)
        if curves:
            comparison.det_curves[key] = {
                name: curves[side.job_id]
                for name, side in (("a", side_a), ("b", side_b))
                if side.job_id in curves
            }
    return comparison
