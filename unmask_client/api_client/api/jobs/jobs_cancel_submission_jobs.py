from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.cancelled_jobs_out import CancelledJobsOut
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    submission_id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/submissions/{submission_id}/cancel-jobs".format(
            submission_id=quote(str(submission_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> CancelledJobsOut | Problem | None:
    if response.status_code == 200:
        response_200 = CancelledJobsOut.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Problem.from_dict(response.json())

        return response_500

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[CancelledJobsOut | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    submission_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[CancelledJobsOut | Problem]:
    """Cancel every queued or running job of a submission

     Like `POST /v1/jobs/{id}/cancel` for each of the submission's unfinished jobs, in one
    transaction; finished jobs are left alone. Another team's submission: 403 or 404.

    Args:
        submission_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CancelledJobsOut | Problem]
    """

    kwargs = _get_kwargs(
        submission_id=submission_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    submission_id: int,
    *,
    client: AuthenticatedClient,
) -> CancelledJobsOut | Problem | None:
    """Cancel every queued or running job of a submission

     Like `POST /v1/jobs/{id}/cancel` for each of the submission's unfinished jobs, in one
    transaction; finished jobs are left alone. Another team's submission: 403 or 404.

    Args:
        submission_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CancelledJobsOut | Problem
    """

    return sync_detailed(
        submission_id=submission_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    submission_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[CancelledJobsOut | Problem]:
    """Cancel every queued or running job of a submission

     Like `POST /v1/jobs/{id}/cancel` for each of the submission's unfinished jobs, in one
    transaction; finished jobs are left alone. Another team's submission: 403 or 404.

    Args:
        submission_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CancelledJobsOut | Problem]
    """

    kwargs = _get_kwargs(
        submission_id=submission_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    submission_id: int,
    *,
    client: AuthenticatedClient,
) -> CancelledJobsOut | Problem | None:
    """Cancel every queued or running job of a submission

     Like `POST /v1/jobs/{id}/cancel` for each of the submission's unfinished jobs, in one
    transaction; finished jobs are left alone. Another team's submission: 403 or 404.

    Args:
        submission_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CancelledJobsOut | Problem
    """

    return (
        await asyncio_detailed(
            submission_id=submission_id,
            client=client,
        )
    ).parsed
