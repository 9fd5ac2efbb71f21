"""Two submissions of a protocol side by side: the page ``/protocols/{id}/compare?a=&b=``, the
overlaid DET plot and the per-speaker plot.

The comparison is read as its JSON twin reads it (``api/routes/compare.py``): the same rows, the
same access check, the same paired intervals.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from api.context import ApiContext
from api.deps import ContextDep
from api.pages.rendering import image_response, not_found, page_viewer, render, render_plot
from api.routes.compare import SubmissionA, SubmissionB, comparison_rows, with_paired_results
from api.schemas import DbId
from services.errors import InvalidInputError
from services.platform.comparison import Comparison
from services.platform.identity import Principal
from services.platform.protocols import get_protocol_by_id
from services.plotting import render_det_overlay, render_speaker_scatter
from services.results.keys import ResultKey
from services.storage.models import ProtocolRecord
from services.vocab import HEADLINE_SCENARIOS, REFERENCE_SCENARIO

router = APIRouter(include_in_schema=False)


def _page_rows(
    context: ApiContext, request: Request, protocol_id: int, a: int, b: int
) -> tuple[Principal | None, Comparison | None, ProtocolRecord | None, InvalidInputError | None]:
    with context.database.session_scope() as session:
        viewer = page_viewer(request, context, session)
        try:
            comparison = comparison_rows(session, viewer, protocol_id, a, b)
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


@router.get("/protocols/{protocol_id}/compare", response_class=HTMLResponse)
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
            return not_found(request, viewer, str(error))
        return render(
            request, "error.html", viewer, 409, title="Cannot compare", message=str(error)
        )
    comparison = await with_paired_results(context, comparison)
    return render(
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
            viewer = page_viewer(request, context, session)
            try:
                return comparison_rows(session, viewer, protocol_id, a, b), viewer
            except InvalidInputError as exc:
                return not_found(request, viewer, str(exc))

    found = await run_in_threadpool(rows)
    if isinstance(found, Response) or not paired:
        return found
    return await with_paired_results(context, found[0]), found[1]


@router.get("/protocols/{protocol_id}/compare/det.{fmt}")
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
        return not_found(request, viewer, f"no DET points stored for {curve!r}")
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
    title = f"DET: {ResultKey.parse(curve).label}"
    body = await render_plot(context, render_det_overlay, drawn, title, fmt=fmt)
    return image_response(body, fmt, request)


@router.get("/protocols/{protocol_id}/compare/per_speaker.{fmt}")
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
        return not_found(request, viewer, reason)
    labels = (
        f"a: {comparison.a.submission_name}"[:40],
        f"b: {comparison.b.submission_name}"[:40],
    )
    title = f"Per-speaker EER: {ResultKey.parse(curve).label}"
    body = await render_plot(
        context, render_speaker_scatter, pairs.a, pairs.b, labels, title, fmt=fmt
    )
    return image_response(body, fmt, request)
