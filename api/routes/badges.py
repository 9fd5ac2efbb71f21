"""README badges: ``/protocols/{id}/submissions/{sid}/badge.svg`` (public submissions only;
``pending`` until one has a public succeeded job under the protocol).

The rules live in ``services.platform.badges``; this route finds the protocol and the (public)
submission and renders the SVG. Anonymous by design: a badge is embedded in READMEs.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.deps import ContextDep
from api.problems import problem_responses
from api.schemas import DbId
from services.platform import access, badges
from services.platform.protocols import get_protocol_by_id

router = APIRouter(tags=["badges"])

SVG_MEDIA_TYPE = "image/svg+xml"
CACHE_SECONDS = 300
PENDING_CACHE_SECONDS = 60
"""A pending badge turns into the result soon after the job succeeds (or the phase reveals)."""


@router.get(
    "/protocols/{protocol_id}/submissions/{submission_id}/badge.svg",
    response_class=Response,
    # A page-like image outside /v1 (no token), as the other pages: not in the API document.
    include_in_schema=False,
    summary="A submission's README badge (SVG)",
    responses={
        **problem_responses(404, 422, 500),
        200: {"content": {SVG_MEDIA_TYPE: {}}, "description": "The badge."},
    },
)
def submission_badge(protocol_id: DbId, submission_id: DbId, context: ContextDep) -> Response:
    """Worst-case semi-informed EER, the trust mark and a colour from the EER's thresholds; a
    neutral ``pending`` badge (200) while the submission has no public succeeded job here."""
    with context.database.session_scope() as session:
        protocol = get_protocol_by_id(session, protocol_id)
        submission = access.visible_submission(session, None, submission_id)
        try:
            data = badges.badge_data(session, protocol=protocol, submission=submission)
        except badges.NoSucceededJobError:
            # Not evaluated yet, still running, or its phase's results still hidden: a README
            # shows a neutral badge, not a broken image.
            return Response(
                badges.pending_badge_svg(),
                media_type=SVG_MEDIA_TYPE,
                headers={"Cache-Control": f"public, max-age={PENDING_CACHE_SECONDS}"},
            )
    return Response(
        badges.badge_svg(data),
        media_type=SVG_MEDIA_TYPE,
        headers={"Cache-Control": f"public, max-age={CACHE_SECONDS}"},
    )
