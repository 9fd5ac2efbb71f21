from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.comparison_out import ComparisonOut
from ...models.problem import Problem
from ...types import UNSET, Response


def _get_kwargs(
    protocol_id: int,
    *,
    a: int,
    b: int,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["a"] = a

    params["b"] = b

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/protocols/{protocol_id}/compare".format(
            protocol_id=quote(str(protocol_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ComparisonOut | Problem | None:
    if response.status_code == 200:
        response_200 = ComparisonOut.from_dict(response.json())

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

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

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
) -> Response[ComparisonOut | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    a: int,
    b: int,
) -> Response[ComparisonOut | Problem]:
    """Compare two submissions of a protocol

     409 when a submission has no succeeded job under this protocol (e.g. it belongs to
    another protocol). The paired interval of a pair not asked for before is computed in the
    background; when it takes longer than the server waits, `paired_notes` says so: ask
    again.

    Args:
        protocol_id (int):
        a (int): The first submission's id.
        b (int): The second submission's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ComparisonOut | Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        a=a,
        b=b,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    a: int,
    b: int,
) -> ComparisonOut | Problem | None:
    """Compare two submissions of a protocol

     409 when a submission has no succeeded job under this protocol (e.g. it belongs to
    another protocol). The paired interval of a pair not asked for before is computed in the
    background; when it takes longer than the server waits, `paired_notes` says so: ask
    again.

    Args:
        protocol_id (int):
        a (int): The first submission's id.
        b (int): The second submission's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ComparisonOut | Problem
    """

    return sync_detailed(
        protocol_id=protocol_id,
        client=client,
        a=a,
        b=b,
    ).parsed


async def asyncio_detailed(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    a: int,
    b: int,
) -> Response[ComparisonOut | Problem]:
    """Compare two submissions of a protocol

     409 when a submission has no succeeded job under this protocol (e.g. it belongs to
    another protocol). The paired interval of a pair not asked for before is computed in the
    background; when it takes longer than the server waits, `paired_notes` says so: ask
    again.

    Args:
        protocol_id (int):
        a (int): The first submission's id.
        b (int): The second submission's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ComparisonOut | Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        a=a,
        b=b,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    a: int,
    b: int,
) -> ComparisonOut | Problem | None:
    """Compare two submissions of a protocol

     409 when a submission has no succeeded job under this protocol (e.g. it belongs to
    another protocol). The paired interval of a pair not asked for before is computed in the
    background; when it takes longer than the server waits, `paired_notes` says so: ask
    again.

    Args:
        protocol_id (int):
        a (int): The first submission's id.
        b (int): The second submission's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ComparisonOut | Problem
    """

    return (
        await asyncio_detailed(
            protocol_id=protocol_id,
            client=client,
            a=a,
            b=b,
        )
    ).parsed
