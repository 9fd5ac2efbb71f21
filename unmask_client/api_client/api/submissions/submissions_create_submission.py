from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.builtin_submission_create import BuiltinSubmissionCreate
from ...models.container_submission_create import ContainerSubmissionCreate
from ...models.problem import Problem
from ...models.service_submission_create import ServiceSubmissionCreate
from ...models.submission_out import SubmissionOut
from ...types import Response


def _get_kwargs(
    *,
    body: BuiltinSubmissionCreate | ContainerSubmissionCreate | ServiceSubmissionCreate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/submissions",
    }

    if isinstance(body, BuiltinSubmissionCreate) or isinstance(body, ContainerSubmissionCreate):
        _kwargs["json"] = body.to_dict()
    else:
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

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
    body: BuiltinSubmissionCreate | ContainerSubmissionCreate | ServiceSubmissionCreate,
) -> Response[Problem | SubmissionOut]:
    """Submit a built-in anonymizer or a container image

     `kind: builtin` (name + params, checked by constructing the anonymizer) or
    `kind: container` (an image pinned by digest; it runs when a job needs it). Archives use
    `POST /v1/submissions/archive` or `POST /v1/submissions/uploads`. Accepted at once and
    immutable from then on.

    Args:
        body (BuiltinSubmissionCreate | ContainerSubmissionCreate | ServiceSubmissionCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SubmissionOut]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: BuiltinSubmissionCreate | ContainerSubmissionCreate | ServiceSubmissionCreate,
) -> Problem | SubmissionOut | None:
    """Submit a built-in anonymizer or a container image

     `kind: builtin` (name + params, checked by constructing the anonymizer) or
    `kind: container` (an image pinned by digest; it runs when a job needs it). Archives use
    `POST /v1/submissions/archive` or `POST /v1/submissions/uploads`. Accepted at once and
    immutable from then on.

    Args:
        body (BuiltinSubmissionCreate | ContainerSubmissionCreate | ServiceSubmissionCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SubmissionOut
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: BuiltinSubmissionCreate | ContainerSubmissionCreate | ServiceSubmissionCreate,
) -> Response[Problem | SubmissionOut]:
    """Submit a built-in anonymizer or a container image

     `kind: builtin` (name + params, checked by constructing the anonymizer) or
    `kind: container` (an image pinned by digest; it runs when a job needs it). Archives use
    `POST /v1/submissions/archive` or `POST /v1/submissions/uploads`. Accepted at once and
    immutable from then on.

    Args:
        body (BuiltinSubmissionCreate | ContainerSubmissionCreate | ServiceSubmissionCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SubmissionOut]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: BuiltinSubmissionCreate | ContainerSubmissionCreate | ServiceSubmissionCreate,
) -> Problem | SubmissionOut | None:
    """Submit a built-in anonymizer or a container image

     `kind: builtin` (name + params, checked by constructing the anonymizer) or
    `kind: container` (an image pinned by digest; it runs when a job needs it). Archives use
    `POST /v1/submissions/archive` or `POST /v1/submissions/uploads`. Accepted at once and
    immutable from then on.

    Args:
        body (BuiltinSubmissionCreate | ContainerSubmissionCreate | ServiceSubmissionCreate):

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
        )
    ).parsed
