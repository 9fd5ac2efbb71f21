from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.submission_out import SubmissionOut
from ...models.submissions_upload_archive_visibility import (
    SubmissionsUploadArchiveVisibility,
)
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    *,
    body: File,
    name: str,
    protocol_id: int,
    visibility: SubmissionsUploadArchiveVisibility
    | Unset = SubmissionsUploadArchiveVisibility.PRIVATE,
    sha256: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    params["name"] = name

    params["protocol_id"] = protocol_id

    json_visibility: str | Unset = UNSET
    if not isinstance(visibility, Unset):
        json_visibility = visibility.value

    params["visibility"] = json_visibility

    json_sha256: str | Unset | None
    if isinstance(sha256, Unset):
        json_sha256 = UNSET
    else:
        json_sha256 = sha256
    params["sha256"] = json_sha256

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/submissions/archive",
        "params": params,
    }

    _kwargs["content"] = body.payload
    headers["Content-Type"] = "application/octet-stream"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | SubmissionOut | None:
    if response.status_code == 201:
        response_201 = SubmissionOut.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 408:
        response_408 = Problem.from_dict(response.json())

        return response_408

    if response.status_code == 411:
        response_411 = Problem.from_dict(response.json())

        return response_411

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Problem.from_dict(response.json())

        return response_500

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | SubmissionOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: File,
    name: str,
    protocol_id: int,
    visibility: SubmissionsUploadArchiveVisibility
    | Unset = SubmissionsUploadArchiveVisibility.PRIVATE,
    sha256: None | str | Unset = UNSET,
) -> Response[Problem | SubmissionOut]:
    """Upload a pre-anonymized archive in the request body (small archives)

     Reads the body in chunks (never whole in memory) and stores it. Larger than
    `max_archive_bytes` -> 413; no bytes for `upload_read_timeout_s` or longer than
    `upload_max_duration_s` in all -> 408; more than `max_concurrent_uploads_per_team` uploads of
    the team at once -> 429; over the team's archive storage quota -> 429. Nothing is stored then.
    The submission is `validating` until the workers have checked the archive against the
    protocol.

    Args:
        name (str): Submission name.
        protocol_id (int): The protocol whose audio the archive anonymizes.
        visibility (SubmissionsUploadArchiveVisibility | Unset):  Default:
            SubmissionsUploadArchiveVisibility.PRIVATE.
        sha256 (None | str | Unset): Optional hex SHA-256 of the archive; a mismatch stores
            nothing (422).
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SubmissionOut]
    """

    kwargs = _get_kwargs(
        body=body,
        name=name,
        protocol_id=protocol_id,
        visibility=visibility,
        sha256=sha256,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: File,
    name: str,
    protocol_id: int,
    visibility: SubmissionsUploadArchiveVisibility
    | Unset = SubmissionsUploadArchiveVisibility.PRIVATE,
    sha256: None | str | Unset = UNSET,
) -> Problem | SubmissionOut | None:
    """Upload a pre-anonymized archive in the request body (small archives)

     Reads the body in chunks (never whole in memory) and stores it. Larger than
    `max_archive_bytes` -> 413; no bytes for `upload_read_timeout_s` or longer than
    `upload_max_duration_s` in all -> 408; more than `max_concurrent_uploads_per_team` uploads of
    the team at once -> 429; over the team's archive storage quota -> 429. Nothing is stored then.
    The submission is `validating` until the workers have checked the archive against the
    protocol.

    Args:
        name (str): Submission name.
        protocol_id (int): The protocol whose audio the archive anonymizes.
        visibility (SubmissionsUploadArchiveVisibility | Unset):  Default:
            SubmissionsUploadArchiveVisibility.PRIVATE.
        sha256 (None | str | Unset): Optional hex SHA-256 of the archive; a mismatch stores
            nothing (422).
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SubmissionOut
    """

    return sync_detailed(
        client=client,
        body=body,
        name=name,
        protocol_id=protocol_id,
        visibility=visibility,
        sha256=sha256,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: File,
    name: str,
    protocol_id: int,
    visibility: SubmissionsUploadArchiveVisibility
    | Unset = SubmissionsUploadArchiveVisibility.PRIVATE,
    sha256: None | str | Unset = UNSET,
) -> Response[Problem | SubmissionOut]:
    """Upload a pre-anonymized archive in the request body (small archives)

     Reads the body in chunks (never whole in memory) and stores it. Larger than
    `max_archive_bytes` -> 413; no bytes for `upload_read_timeout_s` or longer than
    `upload_max_duration_s` in all -> 408; more than `max_concurrent_uploads_per_team` uploads of
    the team at once -> 429; over the team's archive storage quota -> 429. Nothing is stored then.
    The submission is `validating` until the workers have checked the archive against the
    protocol.

    Args:
        name (str): Submission name.
        protocol_id (int): The protocol whose audio the archive anonymizes.
        visibility (SubmissionsUploadArchiveVisibility | Unset):  Default:
            SubmissionsUploadArchiveVisibility.PRIVATE.
        sha256 (None | str | Unset): Optional hex SHA-256 of the archive; a mismatch stores
            nothing (422).
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SubmissionOut]
    """

    kwargs = _get_kwargs(
        body=body,
        name=name,
        protocol_id=protocol_id,
        visibility=visibility,
        sha256=sha256,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: File,
    name: str,
    protocol_id: int,
    visibility: SubmissionsUploadArchiveVisibility
    | Unset = SubmissionsUploadArchiveVisibility.PRIVATE,
    sha256: None | str | Unset = UNSET,
) -> Problem | SubmissionOut | None:
    """Upload a pre-anonymized archive in the request body (small archives)

     Reads the body in chunks (never whole in memory) and stores it. Larger than
    `max_archive_bytes` -> 413; no bytes for `upload_read_timeout_s` or longer than
    `upload_max_duration_s` in all -> 408; more than `max_concurrent_uploads_per_team` uploads of
    the team at once -> 429; over the team's archive storage quota -> 429. Nothing is stored then.
    The submission is `validating` until the workers have checked the archive against the
    protocol.

    Args:
        name (str): Submission name.
        protocol_id (int): The protocol whose audio the archive anonymizes.
        visibility (SubmissionsUploadArchiveVisibility | Unset):  Default:
            SubmissionsUploadArchiveVisibility.PRIVATE.
        sha256 (None | str | Unset): Optional hex SHA-256 of the archive; a mismatch stores
            nothing (422).
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SubmissionOut
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            name=name,
            protocol_id=protocol_id,
            visibility=visibility,
            sha256=sha256,
        )
    ).parsed
