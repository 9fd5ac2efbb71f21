"""The protocol list (``/``) and the metric definitions (``/metrics``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from api.deps import ContextDep
from api.pages.rendering import page_viewer, render
from services.metrics import catalogue
from services.platform import protocols
from services.platform.leaderboard import DET_TOP, ranked_submission_counts
from services.storage.models import ProtocolRecord
from services.vocab import REFERENCE_SCENARIO

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def protocols_page(request: Request, context: ContextDep) -> Response:
    """Every protocol (latest version first per name) with its number of ranked submissions."""
    with context.database.session_scope() as session:
        viewer = page_viewer(request, context, session)
        counts = ranked_submission_counts(
            session,
            viewer_team_id=viewer.team_id if viewer else None,
            include_all_private=bool(viewer and viewer.is_admin),
        )
        groups: dict[str, list[ProtocolRecord]] = {}
        for protocol in protocols.list_protocols(session):
            groups.setdefault(protocol.name, []).append(protocol)
        items = [
            {
                "name": name,
                "versions": [
                    {
                        "id": p.id,
                        "version": p.version,
                        "description": p.description,
                        "created_at": p.created_at,
                        "content_hash": p.content_hash,
                        "submissions": counts.get(p.id, 0),
                    }
                    for p in sorted(versions, key=lambda p: -p.version)
                ],
            }
            for name, versions in sorted(groups.items())
        ]
        return render(request, "protocols.html", viewer, protocols=items)


@router.get("/metrics", response_class=HTMLResponse)
def metrics_page(request: Request, context: ContextDep) -> Response:
    """Every catalogued metric (anchors by key) and the leaderboard's other marks."""
    with context.database.session_scope() as session:
        viewer = page_viewer(request, context, session)
    return render(
        request,
        "metrics.html",
        viewer,
        metrics=catalogue.all_metrics(),
        reference_scenario=REFERENCE_SCENARIO,
        det_top=DET_TOP,
    )
