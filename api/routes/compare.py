"""Two submissions of a protocol side by side: the page ``/protocols/{id}/compare?a=&b=``, its
JSON twin ``/v1/protocols/{id}/compare?a=&b=`` and the overlaid DET plot.

The rules live in ``services.platform.comparison``; these routes check who may see the two
submissions (``services.platform.access``) and render the comparison.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from api.auth import Principal
from api.context import ApiContext
from api.deps import ContextDep, ReadReader
from api.pages.rendering import image_response, render_plot
from api.pages.rendering import not_found as _not_found
from api.pages.rendering import page_viewer as _viewer
from api.pages.rendering import render as _render
from api.routes.common import errors, scope
from api.schemas import DbId
from services.errors import InvalidInputError
from services.platform import access
from services.platform.comparison import Comparison, compare_submissions
from services.platform.comparison.background import PENDING_NOTE
from services.platform.comparison.service import PairedResult, apply_paired
from services.platform.leaderboard import REFERENCE_SCENARIO
from services.platform.protocols import get_protocol_by_id
from services.plotting import render_det_overlay, render_speaker_scatter
from services.results.keys import ResultKey
from services.storage.models import ProtocolRecord
from services.vocab import HEADLINE_SCENARIOS

logger = logging.getLogger(__name__)

router = APIRouter(tags=["compare"])

SubmissionA = Annotated[DbId, Query(description="The first submission's id.")]
SubmissionB = Annotated[DbId, Query(description="The second submission's id.")]


class SideOut(BaseModel):
    submission_id: int
    submission_name: str
    team_slug: str
    job_id: int = Field(description="The job that stands for it (its leaderboard job).")


class MetricComparisonOut(BaseModel):
    metric: str
    label: str
    unit: str
    scenario: str
    backend: str
    a: float | None
    b: float | None
    difference: float | None = Field(description="b - a, in the metric's unit.")
    better: str | None = Field(description="`a`, `b`, `equal`, or null when a value is missing.")
    higher_is_better: bool
    paired_interval: tuple[float, float] | None = Field(
        None,
        description="95 % paired speaker-bootstrap interval of the difference (EER rows of a "
        "(scenario, back-end) where both jobs kept their trials on the same trial grid).",
    )


class PerSpeakerOut(BaseModel):
    speakers: list[str]
    a: list[float] = Field(description="Per-speaker EER (%) of a, in `speakers` order.")
    b: list[float] = Field(description="Per-speaker EER (%) of b, in `speakers` order.")


class ComparisonOut(BaseModel):
    """Every catalogued metric of both submissions' leaderboard jobs, side by side."""

    protocol_id: int
    a: SideOut
    b: SideOut
    metrics: list[MetricComparisonOut]
    utility: list[MetricComparisonOut]
    det_curves: dict[str, dict[str, Any]] = Field(
        description='"<scenario>|<backend>" -> {"a": curve, "b": curve} (pfa, pmiss, eer %).'
    )
    per_speaker_eer: dict[str, PerSpeakerOut] = Field(
        description='"<scenario>|<backend>" -> both jobs\' per-speaker EERs (mean over seeds, of '
        "the attacker shown), where both kept their trials."
    )
    paired_notes: dict[str, str] = Field(
        description='"<scenario>|<backend>" -> why it has no paired interval.'
    )

    @classmethod
    def of(cls, c: Comparison) -> ComparisonOut:
        def out(m: Any) -> MetricComparisonOut:
            return MetricComparisonOut(
                **{k: getattr(m, k) for k in MetricComparisonOut.model_fields}
            )

        return cls(
            protocol_id=c.protocol_id,
            a=SideOut(**vars(c.a)),
            b=SideOut(**vars(c.b)),
            metrics=[out(m) for m in c.privacy],
            utility=[out(m) for m in c.utility],
            det_curves=c.det_curves,
            per_speaker_eer={k: PerSpeakerOut(**vars(v)) for k, v in c.per_speaker.items()},
            paired_notes=c.paired_notes,
        )


def _compare(
    session: Session,
    principal: Principal | None,
    protocol_id: int,
    a: int,
    b: int,
) -> Comparison:
    """The comparison's rows (``trial_refs`` included; the paired results come later, after the
    session is closed: :func:`_with_paired`)."""
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


async def _with_paired(context: ApiContext, comparison: Comparison) -> Comparison:
    """``comparison`` with its paired intervals and per-speaker EERs: cached ones, else computed
    in the app's child processes (``services.platform.comparison.background``) while this request
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
            return _compare(session, principal, protocol_id, a, b)

    comparison = await _with_paired(reader.context, await run_in_threadpool(rows))
    return ComparisonOut.of(comparison)


def _page_rows(
    context: ApiContext, request: Request, protocol_id: int, a: int, b: int
) -> tuple[Principal | None, Comparison | None, ProtocolRecord | None, InvalidInputError | None]:
    with context.database.session_scope() as session:
        viewer = _viewer(request, context, session)
        try:
            comparison = _compare(session, viewer, protocol_id, a, b)
            protocol = get_protocol_by_id(session, protocol_id)
        except InvalidInputError as exc:
            return viewer, None, None, exc
        session.expunge(protocol)
        return viewer, comparison, protocol, None


def _headline_first(key: str) -> tuple[int, str]:
    """Sort key of ``<scenario>|<backend>`` keys: the headline scenarios first, in their order."""
    scenario = ResultKey.parse(key).scenario
    order = (*HEADLINE_SCENARIOS, REFERENCE_SCENARIO)
    return (order.index(scenario) if scenario in order else len(order), key)


def verdict_sentence(comparison: Comparison) -> str | None:
    """The compare page's first sentence: which side is more private against the headline
    attacker (``Comparison.headline``), by how many EER points, with the paired 95 % interval
    of b - a or why there is none. None when no headline scenario has both EERs."""
    m = comparison.headline
    if m is None or m.difference is None:
        return None
    a, b = comparison.a.submission_name, comparison.b.submission_name
    points = f"{abs(m.difference):.{m.digits}f}"
    if m.better == "equal":
        text = f"{b} (b) and {a} (a) are equally private"
    else:
        more, less = (b, a) if m.better == "b" else (a, b)
        side, other = ("b", "a") if m.better == "b" else ("a", "b")
        text = f"{more} ({side}) is more private than {less} ({other}) by {points} EER points"
    text += f" against the {m.scenario} attacker ({m.backend})"
    if m.paired_interval is not None:
        low, high = m.paired_interval
        text += f", 95 % CI of b − a {low:+.{m.digits}f} to {high:+.{m.digits}f}"
        if low <= 0 <= high:
            text += ": the interval includes 0, so the difference may be chance"
    else:
        note = comparison.paired_notes.get(ResultKey(m.scenario, m.backend).format())
        text += f" ({note})" if note else " (no paired interval)"
    return text + "."


@router.get(
    "/protocols/{protocol_id}/compare", response_class=HTMLResponse, include_in_schema=False
)
async def compare_page(
    context: ContextDep,
    request: Request,
    protocol_id: DbId,
    a: SubmissionA,
    b: SubmissionB,
) -> Response:
    """The two submissions' metrics, differences, DET curves and utility."""
    viewer, comparison, protocol, error = await run_in_threadpool(
        _page_rows, context, request, protocol_id, a, b
    )
    if error is not None or comparison is None:
        if error is None or "not found" in str(error):
            return _not_found(request, viewer, str(error))
        return _render(
            request, "error.html", viewer, 409, title="Cannot compare", message=str(error)
        )
    comparison = await _with_paired(context, comparison)
    return _render(
        request,
        "compare.html",
        viewer,
        protocol=protocol,
        comparison=comparison,
        verdict=verdict_sentence(comparison),
        det_keys=sorted(comparison.det_curves, key=_headline_first),
    )


async def _plotted(
    context: ApiContext,
    request: Request,
    protocol_id: int,
    fmt: str,
    a: int,
    b: int,
    *,
    paired: bool,
) -> tuple[Comparison, Principal | None] | Response:
    """(the comparison a plot draws, the viewer), or the 404 answer instead (an unknown format,
    protocol or submission). ``paired``: with the paired results (the per-speaker plot)."""
    if fmt not in ("png", "svg"):
        return Response("format must be png or svg", status_code=404, media_type="text/plain")

    def rows() -> tuple[Comparison, Principal | None] | Response:
        with context.database.session_scope() as session:
            viewer = _viewer(request, context, session)
            try:
                return _compare(session, viewer, protocol_id, a, b), viewer
            except InvalidInputError as exc:
                return _not_found(request, viewer, str(exc))

    found = await run_in_threadpool(rows)
    if isinstance(found, Response) or not paired:
        return found
    return await _with_paired(context, found[0]), found[1]


@router.get("/protocols/{protocol_id}/compare/det.{fmt}", include_in_schema=False)
async def compare_det_plot(
    context: ContextDep,
    request: Request,
    protocol_id: DbId,
    fmt: str,
    a: SubmissionA,
    b: SubmissionB,
    curve: str = Query(..., max_length=160, description='"<scenario>|<backend>"'),
) -> Response:
    """Both submissions' DET curves of one (scenario, back-end), overlaid. PNG or SVG."""
    found = await _plotted(context, request, protocol_id, fmt, a, b, paired=False)
    if isinstance(found, Response):
        return found
    comparison, viewer = found
    curves = comparison.det_curves.get(curve)
    if not curves:
        return _not_found(request, viewer, f"no DET points stored for {curve!r}")
    drawn = {}
    for name, side in (("a", comparison.a), ("b", comparison.b)):
        points = curves.get(name)
        if points is None:
            continue
        eer = points.get("eer")
        label = f"{name}: {side.submission_name}"[:60]
        drawn[label] = (
            points["pfa"],
            points["pmiss"],
            eer if isinstance(eer, int | float) else None,
        )
    title = f"DET: {curve.replace('|', ', ')}"
    body = await render_plot(context, render_det_overlay, drawn, title, fmt=fmt)
    return image_response(body, fmt, request)


@router.get("/protocols/{protocol_id}/compare/per_speaker.{fmt}", include_in_schema=False)
async def compare_per_speaker_plot(
    context: ContextDep,
    request: Request,
    protocol_id: DbId,
    fmt: str,
    a: SubmissionA,
    b: SubmissionB,
    curve: str = Query(..., max_length=160, description='"<scenario>|<backend>"'),
) -> Response:
    """Per-speaker EER of a (x) against b (y) for one (scenario, back-end). PNG or SVG."""
    found = await _plotted(context, request, protocol_id, fmt, a, b, paired=True)
    if isinstance(found, Response):
        return found
    comparison, viewer = found
    pairs = comparison.per_speaker.get(curve)
    if pairs is None:
        reason = comparison.paired_notes.get(curve, f"no per-speaker EERs for {curve!r}")
        return _not_found(request, viewer, reason)
    labels = (
        f"a: {comparison.a.submission_name}"[:40],
        f"b: {comparison.b.submission_name}"[:40],
    )
    title = f"Per-speaker EER: {curve.replace('|', ', ')}"
    body = await render_plot(
        context, render_speaker_scatter, pairs.a, pairs.b, labels, title, fmt=fmt
    )
    return image_response(body, fmt, request)
