"""A job's page (``/jobs/{id}``), the status JSON it polls, and its artifacts' bytes (plots and
downloads, after the same visibility check as ``/v1/jobs/{id}/artifacts``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from sqlalchemy.orm import Session

from api.context import ApiContext
from api.deps import ContextDep
from api.pages.rendering import not_found, page_viewer, render
from api.schemas import DbId
from services.platform import access, results
from services.platform.identity import Principal
from services.storage.errors import NotFoundError
from services.storage.models import Job
from services.vocab import TERMINAL_STATES, RunState, job_page_vocabulary

router = APIRouter(include_in_schema=False)

# Blobs up to this size are read whole and verified against their sha256; larger ones stream.
INLINE_ARTIFACT_BYTES = 16 * 1024 * 1024
POLL_INTERVAL_MS = 2000
LOG_CHARS = 4000


def _visible_job(session: Session, viewer: Principal | None, job_id: int) -> Job | None:
    """The job if ``viewer`` (None: anonymous) may see it, else None (the page answers 404)."""
    try:
        return access.visible_job(session, viewer, job_id)
    except NotFoundError:
        return None


def job_status(job: Job, log_chars: int = LOG_CHARS) -> dict[str, Any]:
    """The JSON the job page polls: state, progress, per-stage progress and log tails."""
    stages = [
        {
            "name": s.name,
            "state": s.state,
            "progress": round(float(s.progress or 0.0), 4),
            "attempts": s.attempts,
            "worker_host": s.worker_host,
            "started_at": s.started_at.isoformat() if s.started_at else None,
            "finished_at": s.finished_at.isoformat() if s.finished_at else None,
            "heartbeat_at": s.heartbeat_at.isoformat() if s.heartbeat_at else None,
            "error": s.error,
            "log_tail": (s.log_tail or "")[-log_chars:] if log_chars else "",
        }
        for s in job.stages
    ]
    fractions = [float(s.progress or 0.0) for s in job.stages]
    progress = sum(fractions) / len(fractions) if fractions else 0.0
    return {
        "id": job.id,
        "state": job.state,
        "finished": RunState(job.state) in TERMINAL_STATES,
        "progress": round(progress, 4),
        "error_message": job.error_message,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "stages": stages,
    }


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(
    request: Request,
    context: ContextDep,
    job_id: DbId,
) -> Response:
    """Live stage progress and log tail (the page polls ``/jobs/{id}/status.json``)."""
    with context.database.session_scope() as session:
        viewer = page_viewer(request, context, session)
        job = _visible_job(session, viewer, job_id)
        if job is None:
            return not_found(request, viewer, f"job {job_id} not found")
        return render(
            request,
            "job.html",
            viewer,
            job=job,
            status=job_status(job),
            poll_interval_ms=POLL_INTERVAL_MS,
            vocabulary=job_page_vocabulary(),
        )


@router.get("/jobs/{job_id}/status.json")
def job_status_json(
    request: Request,
    context: ContextDep,
    job_id: DbId,
) -> Response:
    """State and stages of a visible job (same visibility as the page)."""
    with context.database.session_scope() as session:
        viewer = page_viewer(request, context, session)
        job = _visible_job(session, viewer, job_id)
        if job is None:
            return JSONResponse({"detail": f"job {job_id} not found"}, status_code=404)
        return JSONResponse(job_status(job), headers={"Cache-Control": "no-store"})


def _stream(context: ApiContext, key: str) -> Iterator[bytes]:
    with context.blob_store.open_read(key) as source:
        while chunk := source.read(1024 * 1024):
            yield chunk


@router.get("/jobs/{job_id}/artifacts/{artifact_id}")
def artifact_file(
    request: Request,
    context: ContextDep,
    job_id: DbId,
    artifact_id: DbId,
    download: bool = Query(False),
) -> Response:
    """An artifact's bytes (plots inline, anything with ``?download=1`` as an attachment)."""
    with context.database.session_scope() as session:
        viewer = page_viewer(request, context, session)
        job = _visible_job(session, viewer, job_id)
        try:
            artifact = results.get_artifact(session, job.id, artifact_id) if job else None
        except NotFoundError:
            artifact = None
        if artifact is None:
            return JSONResponse({"detail": "artifact not found"}, status_code=404)
        key, size, media_type = artifact.key, artifact.size_bytes, artifact.media_type
    name = PurePosixPath(key).name
    headers = {"Cache-Control": "private, max-age=300"}
    if download:
        headers["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(name)}"
    if size <= INLINE_ARTIFACT_BYTES:
        data = context.blob_store.get_bytes(key)  # checked against the recorded sha256
        return Response(data, media_type=media_type, headers=headers)
    return StreamingResponse(_stream(context, key), media_type=media_type, headers=headers)
