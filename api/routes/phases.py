"""Challenge phases of a protocol (read: everyone; change: administrators) and the
administrators' re-run of every result of an older evaluator.

The rules live in ``services.platform.phases`` and ``services.platform.evaluator``; these routes
check the scope, call them in one transaction and render the result.
"""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Response, status

from api.deps import AdminPrincipal, ContextDep, ReadReader
from api.routes.common import errors, scope
from api.schemas import DbId, PhaseIn, PhaseName, PhaseOut, PhasePatch, RerunOut, RerunRequest
from api.schemas.phases import HiddenPhaseIn
from services.pipeline.stage_versions import current_evaluator
from services.platform import phases as phase_rules
from services.platform.evaluator import rerun_outdated
from services.platform.protocols import get_protocol_by_id
from services.platform.webhooks.payloads import release_phase_events
from services.storage.models import PhaseVisibility

router = APIRouter(prefix="/v1/protocols", tags=["phases"])


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@router.get(
    "/{protocol_id}/phases",
    response_model=list[PhaseOut],
    summary="List a protocol's phases",
    responses=errors(404),
    openapi_extra=scope("read"),
)
def list_phases(protocol_id: DbId, reader: ReadReader) -> list[PhaseOut]:
    """The protocol's phases in order; none: jobs are accepted at any time, results public."""
    with reader.open() as (_principal, session):
        protocol = get_protocol_by_id(session, protocol_id)
        now = _now()
        return [PhaseOut.of(p, now) for p in phase_rules.list_phases(session, protocol.id)]


@router.post(
    "/{protocol_id}/phases",
    response_model=PhaseOut,
    status_code=status.HTTP_201_CREATED,
    summary="Add a phase to a protocol",
    responses=errors(404, 409),
    openapi_extra=scope("admin"),
)
def create_phase(
    principal: AdminPrincipal,
    context: ContextDep,
    protocol_id: DbId,
    body: PhaseIn,
    response: Response,
) -> PhaseOut:
    """422: window ending at or before its start, hidden phase without `reveal_at` (one already
    past reveals the results at once); 409: overlapping another phase."""
    with context.database.session_scope() as session:
        protocol = get_protocol_by_id(session, protocol_id)
        phase = phase_rules.create_phase(
            session,
            protocol_id=protocol.id,
            spec=phase_rules.PhaseSpec(
                name=body.name,
                starts_at=body.starts_at,
                ends_at=body.ends_at,
                submission_limit=body.submission_limit,
                visibility=body.visibility,
                reveal_at=body.reveal_at if isinstance(body, HiddenPhaseIn) else None,
                allowed_kinds=body.allowed_kinds,
            ),
        )
        response.headers["Location"] = f"/v1/protocols/{protocol.id}/phases/{phase.name}"
        return PhaseOut.of(phase, _now())


@router.patch(
    "/{protocol_id}/phases/{name}",
    response_model=PhaseOut,
    summary="Change a phase",
    responses=errors(404, 409),
    openapi_extra=scope("admin"),
)
def update_phase(
    principal: AdminPrincipal,
    context: ContextDep,
    protocol_id: DbId,
    body: PhasePatch,
    name: PhaseName,
) -> PhaseOut:
    """Moving `reveal_at` to now reveals a hidden phase's results at once (pages, JSON, CSV;
    webhook events within one outbox relay period). A change the stored fields do not allow
    (an end before the stored start, `reveal_at` on a public phase, a reveal time after the
    events were released) is a 409 naming the rule."""
    changes = body.model_dump(exclude_unset=True)
    if "visibility" in changes and changes["visibility"] is not None:
        changes["visibility"] = PhaseVisibility(changes["visibility"]).value
    with context.database.session_scope() as session:
        phase = phase_rules.get_phase(session, protocol_id, name)
        # Locked: the outbox relay (SKIP LOCKED) releases a due phase's events, or this does.
        session.refresh(phase, with_for_update=True)
        held = phase.visibility == PhaseVisibility.HIDDEN.value and phase.events_released_at is None
        phase_rules.update_phase(session, phase=phase, changes=changes)
        if held and phase.visibility == PhaseVisibility.PUBLIC.value:
            release_phase_events(session, phase)
        return PhaseOut.of(phase, _now())


@router.delete(
    "/{protocol_id}/phases/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a phase without jobs",
    responses=errors(404, 409),
    openapi_extra=scope("admin"),
)
def delete_phase(
    principal: AdminPrincipal,
    context: ContextDep,
    protocol_id: DbId,
    name: PhaseName,
) -> Response:
    """409 when jobs were created in it (end it instead)."""
    with context.database.session_scope() as session:
        phase_rules.delete_phase(session, phase=phase_rules.get_phase(session, protocol_id, name))
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{protocol_id}/rerun-outdated",
    response_model=RerunOut,
    tags=["admin"],
    summary="Re-run results of an older evaluator with the current one",
    responses=errors(404),
    openapi_extra=scope("admin"),
)
def rerun_outdated_results(
    principal: AdminPrincipal,
    context: ContextDep,
    protocol_id: DbId,
    body: RerunRequest | None = None,
) -> RerunOut:
    """Queues one uncharged re-run per submission whose leaderboard job was scored by another
    scorer (stage versions) than the current one: unchanged stages are reused, no quota or phase
    limit is charged, and the old row stays on the leaderboard until its re-run succeeds."""
    include_current = body.include_current if body is not None else False
    with context.database.session_scope() as session:
        protocol = get_protocol_by_id(session, protocol_id)
        plan = rerun_outdated(
            session,
            protocol_id=protocol.id,
            created_by_user_id=principal.user_id,
            include_current=include_current,
        )
    return RerunOut(
        current_scorer=plan.current_scorer,
        current_evaluator=current_evaluator(),
        queued=plan.queued,
        already_running=plan.already_running,
    )
