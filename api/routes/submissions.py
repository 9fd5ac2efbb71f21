"""Submissions: built-in anonymizers, container images, pre-anonymized archives."""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import IO, Annotated

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.concurrency import run_in_threadpool

from api.context import ApiContext
from api.deps import ContextDep, ReadReader, SubmitPrincipal
from api.problems import ApiProblem
from api.routes.archive_transfer import (
    ArchiveTooLargeError,
    UploadTicket,
    UploadTimeoutError,
    abort_presigned_upload,
    archive_key,
    decode_ticket,
    encode_ticket,
    finish_presigned_upload,
    spool_body,
    start_presigned_upload,
    upload_slots,
    upload_timeout_problem,
)
from api.routes.common import PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, errors, scope
from api.schemas import (
    SHA256_HEX_PATTERN,
    ArchiveUploadComplete,
    ArchiveUploadCreate,
    ArchiveUploadOut,
    Cursor,
    DbId,
    NameQueryText,
    SubmissionCreate,
    SubmissionKind,
    SubmissionOut,
    SubmissionPageOut,
    UploadPart,
    Visibility,
)
from services.anonymizers.kinds.archive import KIND as ARCHIVE_KIND
from services.anonymizers.kinds.registry import kind_of
from services.platform import submissions
from services.platform.access import visible_submission
from services.platform.archives import (
    abort_multipart_upload,
    mark_upload_completed,
    record_upload,
    request_validation,
)
from services.platform.identity import Principal, lock_team
from services.platform.protocols import get_protocol_by_id
from services.platform.quotas import check_archive_storage_quota, check_submission_quota
from services.storage.blob_interface import BlobInfo, BlobStore
from services.storage.errors import BlobIntegrityError, BlobNotFoundError

logger = logging.getLogger("unmask.api")

router = APIRouter(prefix="/v1/submissions", tags=["submissions"])


@router.post(
    "",
    response_model=SubmissionOut,
    status_code=status.HTTP_201_CREATED,
    summary="Submit a built-in anonymizer or a container image",
    responses=errors(429),
    openapi_extra=scope("submit"),
)
def create_submission(
    principal: SubmitPrincipal,
    context: ContextDep,
    body: SubmissionCreate,
) -> SubmissionOut:
    """`kind: builtin` (name + params, checked by constructing the anonymizer) or
    `kind: container` (an image pinned by digest; it runs when a job needs it). Archives use
    `POST /v1/submissions/archive` or `POST /v1/submissions/uploads`. Accepted at once and
    immutable from then on."""
    # The body's kind checks its own field (services/anonymizers/kinds/): a 422 names it.
    kind = kind_of(body.kind)
    assert kind.submission_field is not None  # the body union holds JSON-submitted kinds only
    fields = kind.submission_columns(getattr(body, kind.submission_field), context.settings)
    with context.database.session_scope() as session:
        lock_team(session, principal.team_id)
        check_submission_quota(session, settings=context.settings, team_id=principal.team_id)
        submission = submissions.create_submission(
            session,
            principal.team_id,
            body.name,
            body.kind,
            visibility=body.visibility,
            created_by_user_id=principal.user_id,
            description=body.description,
            paper_url=body.paper_url,
            code_url=body.code_url,
            **fields,
        )
        created = kind.created_fields(kind.columns_of(submission), context.settings)
        return SubmissionOut.of(submission).model_copy(update=created)


def _register_archive(
    context: ApiContext,
    principal: Principal,
    *,
    key: str,
    sha256: str,
    size_bytes: int,
    name: str,
    visibility: str,
    protocol_id: int,
    presigned: bool,
) -> tuple[int, bool]:
    """Create the (pending) archive submission for an uploaded blob: (id, created).

    A streamed archive is charged to the storage quota here (its size is known only now); a
    presigned one was charged when its URLs were handed out, and its upload record is closed.
    """
    with context.database.session_scope() as session:
        existing = submissions.find_submission_by_archive_key(session, principal.team_id, key)
        if existing is not None:
            return existing.id, False
        lock_team(session, principal.team_id)
        check_submission_quota(session, settings=context.settings, team_id=principal.team_id)
        if presigned:
            mark_upload_completed(session, key)
        else:
            check_archive_storage_quota(
                session,
                settings=context.settings,
                team_id=principal.team_id,
                adding_bytes=size_bytes,
            )
        submission = submissions.create_submission(
            session,
            principal.team_id,
            name,
            ARCHIVE_KIND,
            visibility=visibility,
            created_by_user_id=principal.user_id,
            archive_blob_key=key,
            archive_sha256=sha256,
            protocol_id=protocol_id,
            accept=False,
        )
        submission.archive_size_bytes = size_bytes
        # Queued in this transaction (outbox): sent after the commit, or by the relay later.
        request_validation(session, submission_id=submission.id)
        return submission.id, True


def _submission_out(context: ApiContext, submission_id: int) -> SubmissionOut:
    with context.database.session_scope() as session:
        return SubmissionOut.of(submissions.get_submission(session, submission_id))


def _precheck_archive(
    context: ApiContext, principal: Principal, protocol_id: int, size_bytes: int
) -> None:
    with context.database.session_scope() as session:
        get_protocol_by_id(session, protocol_id)
        check_submission_quota(session, settings=context.settings, team_id=principal.team_id)
        check_archive_storage_quota(
            session, settings=context.settings, team_id=principal.team_id, adding_bytes=size_bytes
        )


def _declared_archive_length(request: Request, limit: int) -> int | None:
    """The request's Content-Length (bytes), None when absent; 413 above ``limit``.

    Content-Length frames the message: the HTTP server refuses a malformed one before the app
    (a problem document, ``api.middleware.header_timeout``), so the document does not declare it a
    parameter."""
    declared = request.headers.get("content-length", "")
    length = int(declared) if declared.isascii() and declared.isdigit() else None
    if length is not None and length > limit:
        raise ApiProblem(
            413,
            f"archive of {length} bytes is larger than the limit of {limit} bytes for "
            "uploads through the API; use POST /v1/submissions/uploads (presigned URLs)",
            extra={"limit_bytes": limit},
        )
    return length


def _store_archive(
    store: BlobStore, key: str, file: IO[bytes], *, media_type: str, sha256: str | None
) -> BlobInfo:
    """``file`` stored under ``key``; 422 naming ``query.sha256`` when it does not match (then
    nothing is stored)."""
    try:
        return store.put_stream(key, file, media_type=media_type, expected_sha256=sha256)
    except BlobIntegrityError as exc:
        raise ApiProblem(
            422,
            f"query.sha256: the archive does not match it ({exc})",
            slug="integrity-error",
            extra={"errors": [{"field": "query.sha256", "message": str(exc)}]},
        ) from None


@router.post(
    "/archive",
    response_model=SubmissionOut,
    status_code=status.HTTP_201_CREATED,
    summary="Upload a pre-anonymized archive in the request body (small archives)",
    responses=errors(404, 408, 411, 413, 429, 503),
    openapi_extra={
        **scope("submit"),
        "requestBody": {
            "required": True,
            "description": "The archive's bytes (e.g. a .tar.gz or .zip).",
            "content": {
                "application/octet-stream": {
                    "schema": {"type": "string", "format": "binary", "minLength": 1}
                }
            },
        },
    },
)
async def upload_archive(
    principal: SubmitPrincipal,
    context: ContextDep,
    request: Request,
    name: Annotated[NameQueryText, Query(description="Submission name.")],
    protocol_id: Annotated[
        DbId, Query(description="The protocol whose audio the archive anonymizes.")
    ],
    visibility: Visibility = Query("private"),
    sha256: str | None = Query(
        None,
        pattern=SHA256_HEX_PATTERN,
        description="Optional hex SHA-256 of the archive; a mismatch stores nothing (422).",
    ),
) -> SubmissionOut:
    """Reads the body in chunks (never whole in memory) and stores it. Larger than
    `max_archive_bytes` -> 413; no bytes for `upload_read_timeout_s` or longer than
    `upload_max_duration_s` in all -> 408; more than `max_concurrent_uploads_per_team` uploads of
    the team at once -> 429; over the team's archive storage quota -> 429. Nothing is stored then.
    The submission is `validating` until the workers have checked the archive against the
    protocol."""
    limit = context.settings.max_archive_bytes
    content_length = _declared_archive_length(request, limit)
    settings = context.settings
    await run_in_threadpool(_precheck_archive, context, principal, protocol_id, content_length or 0)
    key = archive_key(protocol_id, principal.team_id)
    store = context.blob_store
    media_type = request.headers.get("content-type") or "application/octet-stream"
    slots = upload_slots(request.app)
    with slots.acquire(
        f"team:{principal.team_id}",
        settings.max_concurrent_uploads_per_team,
        f"team {principal.team_id}",
    ):
        # The body is read on the event loop (no worker thread waits on a slow client), then
        # stored from the local temporary file.
        try:
            body = await spool_body(
                request.stream().__aiter__(),
                limit=limit,
                read_timeout_s=settings.upload_read_timeout_s,
                total_s=settings.upload_max_duration_s,
            )
        except ArchiveTooLargeError:
            raise ApiProblem(
                413,
                f"archive is larger than the limit of {limit} bytes for uploads through the API; "
                "use POST /v1/submissions/uploads (presigned URLs)",
                extra={"limit_bytes": limit},
            ) from None
        except UploadTimeoutError as exc:
            raise upload_timeout_problem(exc) from None
    with body.file:
        if body.size_bytes == 0:
            raise ApiProblem(422, "body: the archive is empty")
        info = await run_in_threadpool(
            _store_archive, store, key, body.file, media_type=media_type, sha256=sha256
        )
    try:
        submission_id, _ = await run_in_threadpool(
            lambda: _register_archive(
                context,
                principal,
                key=key,
                sha256=info.sha256 or "",
                size_bytes=info.size_bytes,
                name=name,
                visibility=visibility,
                protocol_id=protocol_id,
                presigned=False,
            )
        )
    except BaseException:
        await run_in_threadpool(store.delete, key)
        raise
    return await run_in_threadpool(_submission_out, context, submission_id)


@router.post(
    "/uploads",
    response_model=ArchiveUploadOut,
    status_code=status.HTTP_201_CREATED,
    summary="Start a presigned (multipart) upload of a large archive",
    responses=errors(404, 409, 413, 429),
    openapi_extra=scope("submit"),
)
def start_upload(
    principal: SubmitPrincipal,
    context: ContextDep,
    body: ArchiveUploadCreate,
    request: Request,
) -> ArchiveUploadOut:
    """Returns one presigned PUT per part (S3 multipart; one PUT on the local store) and an
    `upload_id` ticket. PUT each part's bytes to its URL (with its headers), then call
    `POST /v1/submissions/uploads/{upload_id}/complete` with the parts' ETags."""
    settings = context.settings
    if body.size_bytes > settings.max_presigned_archive_bytes:
        # The document states this limit as the field's maximum: a field out of range (422).
        raise ApiProblem(
            422,
            f"body.size_bytes: {body.size_bytes} bytes is larger than this server's limit of "
            f"{settings.max_presigned_archive_bytes} bytes (UNMASK_MAX_PRESIGNED_ARCHIVE_BYTES)",
            extra={"limit_bytes": settings.max_presigned_archive_bytes},
        )
    _precheck_archive(context, principal, body.protocol_id, body.size_bytes)
    key = archive_key(body.protocol_id, principal.team_id)
    expires_s = settings.s3_presign_expiry_s
    upload_id, part_size, parts = start_presigned_upload(
        context.blob_store,
        key,
        size_bytes=body.size_bytes,
        sha256=body.sha256,
        media_type=body.media_type,
        part_bytes=settings.upload_part_bytes,
        expires_s=expires_s,
    )
    expires_at = time.time() + expires_s
    try:
        # Recorded (and charged to the storage quota) before any URL leaves: an upload that is
        # never completed is aborted by the reaper once the ticket expired.
        with context.database.session_scope() as session:
            lock_team(session, principal.team_id)
            check_archive_storage_quota(
                session,
                settings=settings,
                team_id=principal.team_id,
                adding_bytes=body.size_bytes,
            )
            record_upload(
                session,
                team_id=principal.team_id,
                blob_key=key,
                s3_upload_id=upload_id,
                size_bytes=body.size_bytes,
                expires_at=dt.datetime.fromtimestamp(expires_at, dt.UTC),
            )
    except BaseException:
        abort_multipart_upload(context.blob_store, key, upload_id)
        raise
    ticket = UploadTicket(
        team_id=principal.team_id,
        user_id=principal.user_id,
        key=key,
        sha256=body.sha256,
        size_bytes=body.size_bytes,
        name=body.name,
        visibility=body.visibility,
        protocol_id=body.protocol_id,
        media_type=body.media_type,
        s3_upload_id=upload_id,
        expires_at=expires_at,
    )
    encoded = encode_ticket(ticket, settings.token_hmac_key)
    return ArchiveUploadOut(
        upload_id=encoded,
        key=key,
        multipart=upload_id is not None,
        part_size_bytes=part_size,
        parts=[
            UploadPart(
                part_number=p.part_number,
                url=p.url,
                method=p.method,
                headers=p.headers,
                size_bytes=p.size_bytes,
            )
            for p in parts
        ],
        expires_at=dt.datetime.fromtimestamp(expires_at, dt.UTC),
        # The configured public URL (or the path alone), never the request's Host header.
        complete_url=context.settings.public_url.rstrip("/")
        + request.url_for("complete_upload", upload_id=encoded).path,
    )


@router.post(
    "/uploads/{upload_id}/complete",
    response_model=SubmissionOut,
    status_code=status.HTTP_201_CREATED,
    summary="Finish a presigned upload: verify the archive, create the submission",
    responses={
        **errors(404, 409, 410, 429, 503),
        200: {"model": SubmissionOut, "description": "Already completed."},
    },
    openapi_extra=scope("submit"),
    name="complete_upload",
)
def complete_upload(
    principal: SubmitPrincipal,
    context: ContextDep,
    upload_id: str,
    response: Response,
    body: ArchiveUploadComplete | None = None,
) -> SubmissionOut:
    """Completes the multipart upload, re-reads the blob and checks size and SHA-256 (a
    mismatch deletes it: 422), then creates the `validating` submission and queues its
    validation. Calling it again returns the same submission (200)."""
    ticket = decode_ticket(upload_id, context.settings.token_hmac_key)
    if ticket.team_id != principal.team_id:
        raise ApiProblem(404, "upload_id is not a ticket this server issued")
    store = context.blob_store
    with context.database.session_scope() as session:
        existing = submissions.find_submission_by_archive_key(
            session, principal.team_id, ticket.key
        )
        if existing is not None:
            response.status_code = status.HTTP_200_OK
            return SubmissionOut.of(existing)
    parts = [(p.part_number, p.etag) for p in (body.parts if body else [])]
    finish_presigned_upload(store, ticket, parts)
    try:
        store.verify(
            ticket.key,
            expected_sha256=ticket.sha256,
            expected_size=ticket.size_bytes,
            delete_on_mismatch=True,
        )
    except BlobNotFoundError:
        raise ApiProblem(
            409,
            f"the archive was not uploaded yet (no blob {ticket.key!r}); PUT the parts first",
            slug="upload-incomplete",
        ) from None
    try:
        submission_id, created = _register_archive(
            context,
            principal,
            key=ticket.key,
            sha256=ticket.sha256,
            size_bytes=ticket.size_bytes,
            name=ticket.name,
            visibility=ticket.visibility,
            protocol_id=ticket.protocol_id,
            presigned=True,
        )
    except BaseException:
        store.delete(ticket.key)
        abort_presigned_upload(store, ticket)
        raise
    if not created:
        response.status_code = status.HTTP_200_OK
    return _submission_out(context, submission_id)


@router.get(
    "",
    response_model=SubmissionPageOut,
    summary="List the team's submissions",
    responses=errors(),
    openapi_extra=scope("read"),
)
def list_submissions(
    reader: ReadReader,
    kind: SubmissionKind | None = Query(None),
    limit: int = Query(PAGE_LIMIT_DEFAULT, ge=1, le=PAGE_LIMIT_MAX),
    cursor: Cursor | None = Query(None),
) -> SubmissionPageOut:
    """The caller's team's submissions, newest first, keyset-paginated."""
    with reader.open() as (principal, session):
        page = submissions.list_submissions(
            session,
            team_id=principal.team_id,
            kind=kind.value if kind else None,
            limit=limit,
            cursor=cursor,
        )
        return SubmissionPageOut(
            items=[SubmissionOut.of(s) for s in page.items], next_cursor=page.next_cursor
        )


@router.get(
    # `:int` so that GET /v1/submissions/uploads (a POST-only route) is a 405, not this route.
    "/{submission_id:int}",
    response_model=SubmissionOut,
    summary="Get a submission",
    responses=errors(404),
    openapi_extra=scope("read"),
)
def get_submission(
    reader: ReadReader,
    submission_id: DbId,
) -> SubmissionOut:
    """A submission of the caller's team, or a public one (another team's private: 404)."""
    with reader.open() as (principal, session):
        return SubmissionOut.of(visible_submission(session, principal, submission_id))
