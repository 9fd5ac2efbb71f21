"""Signed URLs of the local blob store, served by the API (embedded mode).

With ``UNMASK_BLOB_BACKEND=local`` and ``UNMASK_BLOB_PUBLIC_URL=http://HOST:PORT/v1/blobs`` the
presigned GET/PUT URLs the API hands out (artifact links, archive uploads) point here. No bearer
token: the HMAC signature in the query (method, key, expiry, expected sha256) is the credential,
checked by ``LocalBlobStore.check_presigned``. With the S3 back-end these routes answer 404.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse

from api.context import ApiContext
from api.deps import ContextDep
from api.problems import ApiProblem, problem_responses
from api.routes.archive_transfer import (
    ArchiveTooLargeError,
    UploadTimeoutError,
    spool_body,
    upload_slots,
    upload_timeout_problem,
)
from services.storage.blob_interface import BLOB_KEY_PATTERN, MAX_KEY_LENGTH
from services.storage.blob_local import LocalBlobStore

router = APIRouter(prefix="/v1/blobs", tags=["blobs"])

# The blob-key rule of services.storage.blob_interface.validate_key, documented and enforced here.
BlobKeyPath = Path(
    max_length=MAX_KEY_LENGTH,
    pattern=BLOB_KEY_PATTERN,
    description="'/'-separated segments of letters, digits and ._=+@-; none empty or starting "
    "with '.'.",
)

_SIGNED_QUERY_DOC = (
    "Query (from the presigned URL, unchanged): `method`, `expires` (Unix s), optional `sha256`, "
    "`signature`."
)


def check_declared_length(request: Request, limit: int) -> None:
    """413 before any byte is read when the request's ``Content-Length`` is above ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiProblem(
            413,
            f"Content-Length {declared} is larger than the limit of {limit} bytes (the size "
            "its upload declared)",
            extra={"limit_bytes": limit},
        )


def _local_store(context: ApiContext) -> LocalBlobStore:
    store = context.blob_store
    if not isinstance(store, LocalBlobStore):
        raise ApiProblem(404, "this server's blob store is S3; use the URLs it presigns")
    return store


@router.get(
    "/{key:path}",
    summary="Download a blob through a signed URL (local blob store)",
    response_class=FileResponse,
    responses={
        **problem_responses(403, 404, 422, 500),
        200: {"content": {"application/octet-stream": {}}, "description": "The blob's bytes."},
    },
    description=_SIGNED_QUERY_DOC,
    openapi_extra={"security": [], "x-required-scope": "none (signed URL)"},
)
def get_blob(
    context: ContextDep,
    key: Annotated[str, BlobKeyPath],
    request: Request,
) -> Response:
    store = _local_store(context)
    store.check_presigned("GET", key, dict(request.query_params))
    info = store.stat(key)
    return FileResponse(store.path_of(key), media_type=info.media_type)


@router.put(
    "/{key:path}",
    summary="Upload a blob through a signed URL (local blob store)",
    status_code=status.HTTP_200_OK,
    responses={
        **problem_responses(403, 404, 408, 413, 422, 429, 500),
        200: {"description": "Stored; the `ETag` header is the blob's sha256."},
    },
    description=_SIGNED_QUERY_DOC + " Body: the bytes; a sha256 mismatch stores nothing (422).",
    openapi_extra={"security": [], "x-required-scope": "none (signed URL)"},
)
async def put_blob(
    context: ContextDep, key: Annotated[str, BlobKeyPath], request: Request
) -> Response:
    store = _local_store(context)
    query = dict(request.query_params)
    expected = store.check_presigned("PUT", key, query)
    settings = context.settings
    # A URL signed with the upload's declared size takes exactly that many bytes.
    declared = store.signed_size(query)
    limit = settings.max_presigned_archive_bytes if declared is None else declared
    check_declared_length(request, limit)
    media_type = request.headers.get("content-type") or "application/octet-stream"
    client = request.client.host if request.client else "unknown"
    # No team here (the URL is the credential): the cap is per client address.
    with upload_slots(request.app).acquire(
        f"client:{client}", settings.max_concurrent_uploads_per_team, f"client {client}"
    ):
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
                f"blob is larger than the limit of {limit} bytes"
                + (" (the size its upload declared)" if declared is not None else ""),
                extra={"limit_bytes": limit},
            ) from None
        except UploadTimeoutError as exc:
            raise upload_timeout_problem(exc) from None
    with body.file:
        info = await run_in_threadpool(
            lambda: store.put_stream(
                key, body.file, media_type=media_type, expected_sha256=expected
            )
        )
    return Response(status_code=200, headers={"ETag": f'"{info.sha256}"'})
