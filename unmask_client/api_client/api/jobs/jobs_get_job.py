from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_out import JobOut
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    job_id: int,
    *,
    log_chars: int | Unset = 2000,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["log_chars"] = log_chars

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/jobs/{job_id}".format(
            job_id=quote(str(job_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> JobOut | Problem | None:
    if response.status_code == 200:
        response_200 = JobOut.from_dict(response.json())

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
) -> Response[JobOut | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    job_id: int,
    *,
    client: AuthenticatedClient,
    log_chars: int | Unset = 2000,
) -> Response[JobOut | Problem]:
    """Get a job: state, per-stage progress, log tails

     The job of the caller's team or of a public submission (another team's private: 404).

    Args:
        job_id (int):
        log_chars (int | Unset): Log tail per stage. Default: 2000.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobOut | Problem]
    """

    kwargs = _get_kwargs(
        job_id=job_id,
        log_chars=log_chars,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    job_id: int,
    *,
    client: AuthenticatedClient,
    log_chars: int | Unset = 2000,
) -> JobOut | Problem | None:
    """Get a job: state, per-stage progress, log tails

     The job of the caller's team or of a public submission (another team's private: 404).

    Args:
        job_id (int):
        log_chars (int | Unset): Log tail per stage. Default: 2000.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobOut | Problem
    """

    return sync_detailed(
        job_id=job_id,
        client=client,
        log_chars=log_chars,
    ).parsed


async def asyncio_detailed(
    job_id: int,
    *,
    client: AuthenticatedClient,
    log_chars: int | Unset = 2000,
) -> Response[JobOut | Problem]:
    """Get a job: state, per-stage progress, log tails

     The job of the caller's team or of a public submission (another team's private: 404).

    Args:
        job_id (int):
        log_chars (int | Unset): Log tail per stage. Default: 2000.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobOut | Problem]
    """

    kwargs = _get_kwargs(
        job_id=job_id,
        log_chars=log_chars,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    job_id: int,
    *,
    client: AuthenticatedClient,
    log_chars: int | Unset = 2000,
) -> JobOut | Problem | None:
    """Get a job: state, per-stage progress, log tails

     The job of the caller's team or of a public submission (another team's private: 404).

    Args:
        job_id (int):
        log_chars (int | Unset): Log tail per stage. Default: 2000.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobOut | Problem
    """

    return (
        await asyncio_detailed(
            job_id=job_id,
            client=client,
            log_chars=log_chars,
        )
    ).parsed
