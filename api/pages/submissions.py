"""A submission's page (``/submissions/{id}``): every result and plot of its evaluation, its
provenance and artifacts."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from api.challenge_html import submission_badge
from api.context import ApiContext
from api.deps import ContextDep
from api.pages.rendering import not_found, page_viewer, render
from api.schemas import DbId
from services.metrics import catalogue
from services.platform import access, results
from services.platform.jobs.records import list_jobs
from services.platform.phases import revealed_jobs_clause
from services.storage.errors import NotFoundError
from services.storage.models import AGGREGATE_SEED, Artifact, Result, RunState

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


def _worst_case_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    """An attacker zoo's worst case per scenario (reference order), read defensively; [] for a
    report of one attacker."""
    worst = document.get("worst_case")
    if not isinstance(worst, Mapping):
        return []
    order = ("original", "ignorant", "lazy-informed", "semi-informed")
    out = []
    for scenario in sorted(worst, key=lambda s: (order.index(s) if s in order else 9, s)):
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


def _result_tables(result_rows: list[Result]) -> dict[str, Any]:
    """Aggregate and per-seed tables; with an attacker zoo the back-end column reads
    ``<attacker> / <backend>`` (one row per attacker)."""
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
    return {
        "aggregate": sorted(aggregate.items()),
        "per_seed": sorted(per_seed.items()),
        "metric_names": metric_names,
    }


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
        {"title": title, "note": notes.get(title, ""), "plots": groups[title]}
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
            selected = next((j for j in jobs if j.state == RunState.SUCCEEDED.value), None)
        if selected is None and jobs:
            selected = jobs[0]
        artifacts = results.list_artifacts(session, selected.id) if selected else []
        rows = results.list_results(session, selected.id) if selected else []
        document = _load_results_document(context, artifacts) if artifacts else {}
        return render(
            request,
            "submission.html",
            viewer,
            submission=submission,
            jobs=jobs,
            job=selected,
            tables=_result_tables(rows),
            plot_groups=_plots(selected.id, artifacts) if selected else [],
            artifacts=artifacts,
            document=document,
            provenance=document.get("provenance") or {},
            training=document.get("training") or {},
            trust=_trust_of(document),
            worst_case=_worst_case_of(document),
            stages=document.get("stages") or [],
            config_json=json.dumps(selected.config, indent=2, sort_keys=True) if selected else "",
            badge=submission_badge(context.settings.public_url, submission, selected),
        )
