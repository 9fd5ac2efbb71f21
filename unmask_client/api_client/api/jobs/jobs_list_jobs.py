from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_page_out import JobPageOut
from ...models.jobs_list_jobs_state_type_0 import JobsListJobsStateType0
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    state: JobsListJobsStateType0 | None | Unset = UNSET,
    submission_id: int | None | Unset = UNSET,
    protocol_id: int | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_state: str | Unset | None
    if isinstance(state, Unset):
        json_state = UNSET
    elif isinstance(state, JobsListJobsStateType0):
        json_state = state.value
    else:
        json_state = state
    params["state"] = json_state

    json_submission_id: int | Unset | None
    if isinstance(submission_id, Unset):
        json_submission_id = UNSET
    else:
        json_submission_id = submission_id
    params["submission_id"] = json_submission_id

    json_protocol_id: int | Unset | None
    if isinstance(protocol_id, Unset):
        json_protocol_id = UNSET
    else:
        json_protocol_id = protocol_id
    params["protocol_id"] = json_protocol_id

    params["limit"] = limit

    json_cursor: str | Unset | None
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/jobs",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> JobPageOut | Problem | None:
    if response.status_code == 200:
        response_200 = JobPageOut.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

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
) -> Response[JobPageOut | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    state: JobsListJobsStateType0 | None | Unset = UNSET,
    submission_id: int | None | Unset = UNSET,
    protocol_id: int | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> Response[JobPageOut | Problem]:
    """List the team's jobs

     Newest first. Keyset pagination: pass `next_cursor` as `cursor`; pages do not shift when
    new jobs arrive. A `Link: <...>; rel="next"` header carries the next page's URL.

    Args:
        state (JobsListJobsStateType0 | None | Unset):
        submission_id (int | None | Unset):
        protocol_id (int | None | Unset):
        limit (int | Unset):  Default: 50.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobPageOut | Problem]
    """

    kwargs = _get_kwargs(
        state=state,
        submission_id=submission_id,
        protocol_id=protocol_id,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    state: JobsListJobsStateType0 | None | Unset = UNSET,
    submission_id: int | None | Unset = UNSET,
    protocol_id: int | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> JobPageOut | Problem | None:
    """List the team's jobs

     Newest first. Keyset pagination: pass `next_cursor` as `cursor`; pages do not shift when
    new jobs arrive. A `Link: <...>; rel="next"` header carries the next page's URL.

    Args:
        state (JobsListJobsStateType0 | None | Unset):
        submission_id (int | None | Unset):
        protocol_id (int | None | Unset):
        limit (int | Unset):  Default: 50.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobPageOut | Problem
    """

    return sync_detailed(
        client=client,
        state=state,
        submission_id=submission_id,
        protocol_id=protocol_id,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    state: JobsListJobsStateType0 | None | Unset = UNSET,
    submission_id: int | None | Unset = UNSET,
    protocol_id: int | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> Response[JobPageOut | Problem]:
    """List the team's jobs

     Newest first. Keyset pagination: pass `next_cursor` as `cursor`; pages do not shift when
    new jobs arrive. A `Link: <...>; rel="next"` header carries the next page's URL.

    Args:
        state (JobsListJobsStateType0 | None | Unset):
        submission_id (int | None | Unset):
        protocol_id (int | None | Unset):
        limit (int | Unset):  Default: 50.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobPageOut | Problem]
    """

    kwargs = _get_kwargs(
        state=state,
        submission_id=submission_id,
        protocol_id=protocol_id,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    state: JobsListJobsStateType0 | None | Unset = UNSET,
    submission_id: int | None | Unset = UNSET,
    protocol_id: int | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> JobPageOut | Problem | None:
    """List the team's jobs

     Newest first. Keyset pagination: pass `next_cursor` as `cursor`; pages do not shift when
    new jobs arrive. A `Link: <...>; rel="next"` header carries the next page's URL.

    Args:
        state (JobsListJobsStateType0 | None | Unset):
        submission_id (int | None | Unset):
        protocol_id (int | None | Unset):
        limit (int | Unset):  Default: 50.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobPageOut | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            state=state,
            submission_id=submission_id,
            protocol_id=protocol_id,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
