"""Two submissions of a protocol side by side, as JSON: ``/v1/protocols/{id}/compare?a=&b=``.

The rules live in ``services.platform.comparison``; this route checks who may see the two
submissions (``services.platform.access``) and renders the comparison. Its HTML twin, the page
``/protocols/{id}/compare?a=&b=`` and its plots, is ``api/pages/compare.py``, which reads the
comparison through the same two functions (:func:`comparison_rows`, :func:`with_paired_results`).
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from api.auth import Principal
from api.context import ApiContext
from api.deps import ReadReader
from api.routes.common import errors, scope
from api.schemas import ComparisonOut, DbId
from services.platform import access
from services.platform.comparison import Comparison, compare_submissions
from services.platform.comparison.background import PENDING_NOTE
from services.platform.comparison.service import PairedResult, apply_paired
from services.platform.protocols import get_protocol_by_id

logger = logging.getLogger(__name__)

router = APIRouter(tags=["compare"])

SubmissionA = Annotated[DbId, Query(description="The first submission's id.")]
SubmissionB = Annotated[DbId, Query(description="The second submission's id.")]


def comparison_rows(
    session: Session,
    principal: Principal | None,
    protocol_id: int,
    a: int,
    b: int,
) -> Comparison:
    """The comparison's rows (``trial_refs`` included; the paired results come later, after the
    session is closed: :func:`with_paired_results`)."""
    protocol = get_protocol_by_id(session, protocol_id)
    return compare_submissions(
        session,
        protocol=protocol,
        a=access.visible_submission(session, principal, a),
        b=access.visible_submission(session, principal, b),
        viewer_team_id=principal.team_id if principal else None,
        include_all=bool(principal and principal.is_admin),
        store=None,
    )


async def with_paired_results(context: ApiContext, comparison: Comparison) -> Comparison:
    """``comparison`` with its paired intervals and per-speaker EERs: cached ones, else computed
    by the background threads (``services.platform.comparison.background``) while this request
    waits up to ``compare_wait_s`` holding neither a database session nor a thread."""
    comparison.paired_notes.clear()
    paired = context.paired_results
    found = {
        key: await run_in_threadpool(paired.lookup_or_submit, *refs)
        for key, refs in sorted(comparison.trial_refs.items())
    }
    waiting = {key: f for key, f in found.items() if isinstance(f, Future)}
    if waiting:
        wrapped = {key: asyncio.wrap_future(f) for key, f in waiting.items()}
        await asyncio.wait(wrapped.values(), timeout=context.settings.compare_wait_s)
        for key, task in wrapped.items():
            if not task.done() or task.cancelled():
                found[key] = PairedResult(None, None, PENDING_NOTE)
            elif task.exception() is not None:
                logger.warning("paired interval of %s failed: %r", key, task.exception())
                found[key] = PairedResult(
                    None, None, f"no paired interval: {type(task.exception()).__name__}"
                )
            else:
                found[key] = task.result()
    for key, result in found.items():
        assert isinstance(result, PairedResult)
        apply_paired(comparison, key, result)
    return comparison


@router.get(
    "/v1/protocols/{protocol_id}/compare",
    response_model=ComparisonOut,
    summary="Compare two submissions of a protocol",
    responses=errors(404, 409),
    openapi_extra=scope("read"),
)
async def compare_json(
    reader: ReadReader,
    protocol_id: DbId,
    a: SubmissionA,
    b: SubmissionB,
) -> ComparisonOut:
    """409 when a submission has no succeeded job under this protocol (e.g. it belongs to
    another protocol). The paired interval of a pair not asked for before is computed in the
    background; when it takes longer than the server waits, `paired_notes` says so: ask
    again."""

    def rows() -> Comparison:
        with reader.open() as (principal, session):
            return comparison_rows(session, principal, protocol_id, a, b)

    comparison = await with_paired_results(reader.context, await run_in_threadpool(rows))
    return ComparisonOut.of(comparison)
