from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.archive_upload_complete import ArchiveUploadComplete
from ...models.problem import Problem
from ...models.submission_out import SubmissionOut
from ...types import UNSET, Response, Unset


def _get_kwargs(
    upload_id: str,
    *,
    body: ArchiveUploadComplete | None | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/submissions/uploads/{upload_id}/complete".format(
            upload_id=quote(str(upload_id), safe=""),
        ),
    }

    if isinstance(body, ArchiveUploadComplete):
        _kwargs["json"] = body.to_dict()
    else:
        _kwargs["json"] = body

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | SubmissionOut | None:
    if response.status_code == 200:
        response_200 = SubmissionOut.from_dict(response.json())

        return response_200

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

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 410:
        response_410 = Problem.from_dict(response.json())

        return response_410

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
    upload_id: str,
    *,
    client: AuthenticatedClient,
    body: ArchiveUploadComplete | None | Unset = UNSET,
) -> Response[Problem | SubmissionOut]:
    """Finish a presigned upload: verify the archive, create the submission

     Completes the multipart upload, re-reads the blob and checks size and SHA-256 (a
    mismatch deletes it: 422), then creates the `validating` submission and queues its
    validation. Calling it again returns the same submission (200).

    Args:
        upload_id (str):
        body (ArchiveUploadComplete | None | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SubmissionOut]
    """

    kwargs = _get_kwargs(
        upload_id=upload_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    upload_id: str,
    *,
    client: AuthenticatedClient,
    body: ArchiveUploadComplete | None | Unset = UNSET,
) -> Problem | SubmissionOut | None:
    """Finish a presigned upload: verify the archive, create the submission

     Completes the multipart upload, re-reads the blob and checks size and SHA-256 (a
    mismatch deletes it: 422), then creates the `validating` submission and queues its
    validation. Calling it again returns the same submission (200).

    Args:
        upload_id (str):
        body (ArchiveUploadComplete | None | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SubmissionOut
    """

    return sync_detailed(
        upload_id=upload_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    upload_id: str,
    *,
    client: AuthenticatedClient,
    body: ArchiveUploadComplete | None | Unset = UNSET,
) -> Response[Problem | SubmissionOut]:
    """Finish a presigned upload: verify the archive, create the submission

     Completes the multipart upload, re-reads the blob and checks size and SHA-256 (a
    mismatch deletes it: 422), then creates the `validating` submission and queues its
    validation. Calling it again returns the same submission (200).

    Args:
        upload_id (str):
        body (ArchiveUploadComplete | None | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SubmissionOut]
    """

    kwargs = _get_kwargs(
        upload_id=upload_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    upload_id: str,
    *,
    client: AuthenticatedClient,
    body: ArchiveUploadComplete | None | Unset = UNSET,
) -> Problem | SubmissionOut | None:
    """Finish a presigned upload: verify the archive, create the submission

     Completes the multipart upload, re-reads the blob and checks size and SHA-256 (a
    mismatch deletes it: 422), then creates the `validating` submission and queues its
    validation. Calling it again returns the same submission (200).

    Args:
        upload_id (str):
        body (ArchiveUploadComplete | None | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SubmissionOut
    """

    return (
        await asyncio_detailed(
            upload_id=upload_id,
            client=client,
            body=body,
        )
    ).parsed
