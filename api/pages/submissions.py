"""A submission's page (``/submissions/{id}``): every result and plot of its evaluation, its
provenance and artifacts."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, get_args

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from api.context import ApiContext
from api.deps import ContextDep
from api.pages.challenge_html import submission_badge
from api.pages.rendering import not_found, page_viewer, render
from api.schemas import DbId
from services.metrics import catalogue
from services.pipeline.zoo import row_attacker
from services.platform import access, results
from services.platform.jobs.records import list_jobs
from services.platform.leaderboard import representative_job
from services.platform.phases import is_hidden, revealed_jobs_clause
from services.storage.errors import NotFoundError
from services.storage.models import AGGREGATE_SEED, Artifact, Job, Phase, Result
from services.vocab import HEADLINE_SCENARIOS, Scenario, trust_mark

logger = logging.getLogger("unmask.pages")

router = APIRouter(include_in_schema=False)

JOBS_LISTED = 50
"""The submission's most recent jobs the page lists (and may show)."""

PLOT_GROUPS: tuple[tuple[str, str, str], ...] = (
    ("det-", "DET curves", "False acceptance vs false rejection (probit axes), one per seed."),
    ("scores-", "Score distributions", "Target vs non-target scores."),
    ("ranks-", "Rank histograms (SRD)", "Rank of the true speaker among the references."),
    (
        "legal-",
        "Legal metrics",
        "Top-1 linkability and singling out against the population size N, one line per "
        "conversation length L with its interval over draws; dashed: chance; dotted: the "
        "paper's original (unprotected) Common Voice speech.",
    ),
    ("srd-", "SRD per representation", "Rank histograms of embeddings, F0 and phone units."),
    ("training-", "VER_S / VER_T per epoch", "Validation error rates of the recognizers."),
    ("size-", "Dataset-size study", "EER against the number of speakers / utterances."),
    ("prerestore", "Pre-restoration attacks", "EER per transform parameter."),
)


WIDE_PLOT_GROUPS = frozenset({"Legal metrics"})
"""Plot groups of two-panel figures, shown one per row so their text stays legible."""


def _plot_group(name: str) -> str:
    for prefix, title, _ in PLOT_GROUPS:
        if name.startswith(prefix):
            return title
    return "Other plots"


def _load_results_document(context: ApiContext, artifacts: list[Artifact]) -> dict[str, Any]:
    """The report's results.json (provenance, training, analyses), or {} when unreadable."""
    for artifact in artifacts:
        if artifact.key.endswith("/results.json"):
            try:
                document: dict[str, Any] = json.loads(context.blob_store.get_bytes(artifact.key))
                return document
            except Exception as exc:  # a page must render without it
                logger.warning("cannot read %s: %s", artifact.key, exc)
    return {}


def _trust_of(document: dict[str, Any]) -> dict[str, Any]:
    """The report's trust block read defensively: trustworthy True / False / None (unknown)."""
    trustworthy, reasons = results.read_trust(document)
    return {"trustworthy": trustworthy, "reasons": reasons}


def scenario_order(config: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The evaluation's scenario order: its config's ``scenarios`` list, then the config
    schema's order (``services.pipeline.config.Scenario``) for any other."""
    listed = [str(s) for s in (config or {}).get("scenarios") or [] if isinstance(s, str)]
    return tuple(dict.fromkeys([*listed, *get_args(Scenario)]))


def _scenario_key(order: Sequence[str]) -> Callable[[str], tuple[int, str]]:
    def key(scenario: str) -> tuple[int, str]:
        return (order.index(scenario) if scenario in order else len(order), scenario)

    return key


def _worst_case_of(document: dict[str, Any], order: Sequence[str]) -> list[dict[str, Any]]:
    """An attacker zoo's worst case per scenario (the evaluation's order), read defensively; []
    for a report of one attacker."""
    worst = document.get("worst_case")
    if not isinstance(worst, Mapping):
        return []
    out = []
    for scenario in sorted(worst, key=_scenario_key(order)):
        entry = worst[scenario]
        if isinstance(entry, Mapping):
            out.append(
                {
                    "scenario": scenario,
                    "attacker": str(entry.get("attacker")),
                    "backend": str(entry.get("backend")),
                    "eer": entry.get(catalogue.EER.key),
                    "attackers": [str(a) for a in entry.get("attackers") or []],
                }
            )
    return out


@dataclass(frozen=True)
class TableColumn:
    """One metric column of a result table: the stored metric key, its header and decimals, and
    the catalogue's metric (where it applies)."""

    key: str
    label: str
    digits: int
    metric: catalogue.Metric

    @classmethod
    def of(cls, metric: catalogue.Metric, label: str | None = None) -> TableColumn:
        """The column of a catalogued metric (its label with the unit where that helps)."""
        return cls(metric.key, label or metric.label, metric.digits, metric)


EER_COLUMN = TableColumn.of(catalogue.EER)
"""The first metric column of the aggregate table, always shown."""

AGGREGATE_COLUMNS = (
    TableColumn.of(catalogue.MIN_CLLR),
    TableColumn.of(catalogue.CLLR),
    TableColumn.of(catalogue.LINKABILITY),
    TableColumn.of(catalogue.SRD_MEAN_DISCLOSURE, "SRD MeanD (bits)"),
    TableColumn.of(catalogue.SRD_IDENTIFICATION_RATE),
)
"""The aggregate table's metric columns after the EER (a column no row has a value for is left
out and named in a note under the table)."""

PER_SEED_COLUMNS = (
    TableColumn.of(catalogue.MIN_CLLR),
    TableColumn.of(catalogue.CLLR),
    TableColumn.of(catalogue.LINKABILITY),
    TableColumn.of(catalogue.ZEBRA_EXPECTED_DISCLOSURE, "ZEBRA (bits)"),
    TableColumn.of(catalogue.SRD_MEAN_DISCLOSURE, "SRD MeanD (bits)"),
    TableColumn.of(catalogue.SRD_IDENTIFICATION_RATE),
)
"""The per-seed table's metric columns after the EER (same rule as the aggregate's)."""


def _present(
    columns: Sequence[TableColumn],
    rows: Sequence[Mapping[str, float | None]],
    inapplicable: set[tuple[str, str]],
    backends: Sequence[str],
) -> tuple[list[TableColumn], list[str]]:
    """(the columns some row has a value for, the labels of those none has although they apply
    to some back-end shown: not measured). A column that applies to no back-end is neither."""
    shown = [c for c in columns if any(r.get(c.key) is not None for r in rows)]
    missing = [
        c.label
        for c in columns
        if c not in shown and any((b, c.key) not in inapplicable for b in backends)
    ]
    return shown, missing


def _score_normalizations(document: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """``{(attacker, back-end): normalization}`` as the report's rows record it (``none`` when a
    row does not say)."""
    out: dict[tuple[str, str], str] = {}
    for row in document.get("rows") or []:
        if isinstance(row, Mapping):
            record = row.get("score_normalization")
            method = record.get("method") if isinstance(record, Mapping) else None
            out[(row_attacker(row), str(row.get("backend")))] = str(method or "none")
    return out


def _inapplicable(
    result_rows: Sequence[Result], document: Mapping[str, Any], several: bool
) -> set[tuple[str, str]]:
    """``{(back-end label, metric key)}``: the table cells whose metric does not apply to that
    back-end's scores (the catalogue's ``Metric.applies``); they are left blank, not dashed."""
    normalizations = _score_normalizations(document)
    out: set[tuple[str, str]] = set()
    for row in result_rows:
        label = f"{row.attacker} / {row.backend}" if several else row.backend
        method = normalizations.get((row.attacker, row.backend), "none")
        for column in (*AGGREGATE_COLUMNS, *PER_SEED_COLUMNS):
            if not column.metric.applies(row.backend, method):
                out.add((label, column.key))
    return out


def _trial_counts(document: Mapping[str, Any], several: bool) -> dict[tuple[str, str, int], str]:
    """``{(scenario, back-end label, seed): "targets / non-targets"}`` from the report's rows
    (the result rows stored per metric do not carry the trial counts)."""
    out: dict[tuple[str, str, int], str] = {}
    for row in document.get("rows") or []:
        if not isinstance(row, Mapping) or row.get("n_target") is None:
            continue
        backend = str(row.get("backend"))
        label = f"{row_attacker(row)} / {backend}" if several else backend
        try:
            seed = int(row.get("seed"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        out[(str(row.get("scenario")), label, seed)] = (
            f"{int(row['n_target'])} / {int(row.get('n_nontarget') or 0)}"
        )
    return out


def _result_tables(
    result_rows: list[Result], order: Sequence[str], document: Mapping[str, Any]
) -> dict[str, Any]:
    """Aggregate and per-seed tables, scenarios in the evaluation's order; with an attacker zoo
    the back-end column reads ``<attacker> / <backend>`` (one row per attacker)."""
    aggregate: dict[tuple[str, str], dict[str, float | None]] = {}
    per_seed: dict[tuple[str, str, int], dict[str, float | None]] = {}
    utility = catalogue.UTILITY_SCENARIO
    several = len({row.attacker for row in result_rows if row.scenario != utility}) > 1
    for row in result_rows:
        if row.scenario == utility:
            continue  # the utility section shows these (one value per job, no back-end)
        backend = f"{row.attacker} / {row.backend}" if several else row.backend
        if row.seed == AGGREGATE_SEED:
            aggregate.setdefault((row.scenario, backend), {})[row.metric] = row.value
        else:
            per_seed.setdefault((row.scenario, backend, row.seed), {})[row.metric] = row.value
    metric_names = sorted({m for values in per_seed.values() for m in values})
    rank = _scenario_key(order)
    scored = [row for row in result_rows if row.scenario != utility]
    inapplicable = _inapplicable(scored, document, several)
    backends = sorted({key[1] for key in aggregate} | {key[1] for key in per_seed})
    aggregate_columns, aggregate_missing = _present(
        AGGREGATE_COLUMNS, list(aggregate.values()), inapplicable, backends
    )
    seed_columns, _ = _present(PER_SEED_COLUMNS, list(per_seed.values()), inapplicable, backends)
    notes = {
        c.metric.applies_note: None
        for c in (*AGGREGATE_COLUMNS, *PER_SEED_COLUMNS)
        if c.metric.applies_note and any((b, c.key) in inapplicable for b in backends)
    }
    return {
        "aggregate": sorted(aggregate.items(), key=lambda kv: (rank(kv[0][0]), kv[0][1])),
        "aggregate_columns": aggregate_columns,
        "aggregate_missing": aggregate_missing,
        "not_applicable": inapplicable,
        "applies_notes": list(notes),
        "per_seed": sorted(per_seed.items(), key=lambda kv: (rank(kv[0][0]), kv[0][1], kv[0][2])),
        "seed_columns": seed_columns,
        "trials": _trial_counts(document, several),
        "metric_names": metric_names,
    }


def verdict_line(tables: Mapping[str, Any], trust: Mapping[str, Any]) -> dict[str, str] | None:
    """The page's one-line verdict, as the CLI's verdict block says it: the EER of the strongest
    attacker (worst case for the maker over back-ends and attackers) in the first headline
    scenario the evaluation scored, its interval or spread, the original-speech reference and
    the trust check. None when no headline scenario has an EER."""
    eer = catalogue.EER
    aggregate: dict[tuple[str, str], Mapping[str, float | None]] = dict(tables["aggregate"])
    for scenario in HEADLINE_SCENARIOS:
        candidates = {b: v.get(eer.key) for (s, b), v in aggregate.items() if s == scenario}
        backend = catalogue.worst_for_maker(eer.key, candidates)
        if backend is not None:
            break
    else:
        return None
    values = aggregate[(scenario, backend)]
    text = f"EER {eer.format(values.get(eer.key))} %"
    n_seeds = values.get("n_seeds")
    std = values.get(eer.std_key)
    seeds = [m for (s, b, _), m in tables["per_seed"] if (s, b) == (scenario, backend)]
    if n_seeds is not None and n_seeds > 1 and std is not None:
        text += f" ± {eer.format(std)} over {int(n_seeds)} seeds"
    elif len(seeds) == 1 and eer.interval is not None:
        low, high = (seeds[0].get(k) for k in eer.interval)
        if low is not None and high is not None:
            text += f" (95 % CI {eer.format(low)}–{eer.format(high)})"
    text += f" for the {scenario} attacker ({backend}); 50 % = chance, higher = more private"
    reference = aggregate.get(("original", backend), {}).get(eer.key)
    if reference is not None:
        text += f"; {eer.format(reference)} % on original speech"
    outcome = trust.get("trustworthy")
    mark = trust_mark(outcome if isinstance(outcome, bool) else None)
    why = {
        True: " (passed the trust checks)",
        False: ": the EER may overestimate privacy",
        None: " (the report has no trust check)",
    }[outcome if isinstance(outcome, bool) else None]
    return {"privacy": text, "attacker": mark.verdict + why, "state": mark.state}


def _wall_time(job: Job, provenance: Mapping[str, Any]) -> dict[str, float | None]:
    """The job's wall time in seconds (started to finished, every phase of it; the report's own
    ``wall_seconds`` times only the process that wrote the report) and its compute time (s,
    reused stages included); None where unknown."""
    wall: float | None = None
    if job.started_at is not None and job.finished_at is not None:
        wall = max(0.0, (job.finished_at - job.started_at).total_seconds())
    elif isinstance(provenance.get("wall_seconds"), int | float):
        wall = float(provenance["wall_seconds"])
    compute = provenance.get("compute_seconds")
    return {"wall": wall, "compute": float(compute) if isinstance(compute, int | float) else None}


def _plots(job_id: int, artifacts: list[Artifact]) -> list[dict[str, Any]]:
    by_stem: dict[str, dict[str, Artifact]] = {}
    for artifact in artifacts:
        path = PurePosixPath(artifact.key)
        if path.suffix in (".png", ".svg"):
            by_stem.setdefault(path.stem, {})[path.suffix] = artifact
    groups: dict[str, list[dict[str, Any]]] = {}
    for stem in sorted(by_stem):
        files = by_stem[stem]
        png = files.get(".png")
        svg = files.get(".svg")
        image = png or svg
        assert image is not None
        groups.setdefault(_plot_group(stem), []).append(
            {
                "name": stem,
                "src": f"/jobs/{job_id}/artifacts/{image.id}",
                "svg": f"/jobs/{job_id}/artifacts/{svg.id}" if svg else None,
            }
        )
    order = [title for _, title, _ in PLOT_GROUPS] + ["Other plots"]
    notes = {title: note for _, title, note in PLOT_GROUPS}
    return [
        {
            "title": title,
            "note": notes.get(title, ""),
            "plots": groups[title],
            "wide": title in WIDE_PLOT_GROUPS,
        }
        for title in order
        if title in groups
    ]


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(
    request: Request,
    submission_id: DbId,
    context: ContextDep,
    job: DbId | None = Query(None, description="Show this job instead of the latest succeeded."),
) -> Response:
    """Every result and plot of a submission's evaluation, its provenance and artifacts."""
    with context.database.session_scope() as session:
        viewer = page_viewer(request, context, session)
        try:
            submission = access.visible_submission(session, viewer, submission_id)
        except NotFoundError as exc:
            return not_found(request, viewer, str(exc))
        revealed = revealed_jobs_clause(
            viewer_team_id=viewer.team_id if viewer else None,
            include_all=bool(viewer and viewer.is_admin),
        )
        jobs = list_jobs(
            session, submission_id=submission.id, limit=JOBS_LISTED, where=revealed
        ).items
        selected = next((j for j in jobs if j.id == job), None) if job is not None else None
        if selected is None:
            # The job the leaderboard, the badge and the comparison show (one rule).
            selected = representative_job(
                session,
                submission.id,
                submission.protocol_id,
                viewer_team_id=viewer.team_id if viewer else None,
                include_all=bool(viewer and viewer.is_admin),
            )
        if selected is None and jobs:
            selected = jobs[0]
        artifacts = results.list_artifacts(session, selected.id) if selected else []
        rows = results.list_results(session, selected.id) if selected else []
        document = _load_results_document(context, artifacts) if artifacts else {}
        order = scenario_order(selected.config if selected else None)
        phase = session.get(Phase, selected.phase_id) if selected and selected.phase_id else None
        # Only its team and administrators see a hidden phase's result: say so to them.
        hidden_phase = (
            {"name": phase.name, "reveal_at": phase.reveal_at}
            if phase is not None and is_hidden(phase)
            else None
        )
        tables = _result_tables(rows, order, document)
        trust = _trust_of(document)
        return render(
            request,
            "submission.html",
            viewer,
            submission=submission,
            jobs=jobs,
            job=selected,
            tables=tables,
            eer_column=EER_COLUMN,
            hidden_phase=hidden_phase,
            verdict=verdict_line(tables, trust) if document or rows else None,
            wall=_wall_time(selected, document.get("provenance") or {}) if selected else None,
            plot_groups=_plots(selected.id, artifacts) if selected else [],
            artifacts=artifacts,
            document=document,
            provenance=document.get("provenance") or {},
            training=document.get("training") or {},
            trust=trust,
            worst_case=_worst_case_of(document, order),
            stages=document.get("stages") or [],
            config_json=json.dumps(selected.config, indent=2, sort_keys=True) if selected else "",
            badge=submission_badge(context.settings.public_url, submission, selected),
        )
