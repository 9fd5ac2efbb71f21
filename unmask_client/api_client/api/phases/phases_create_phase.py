from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.hidden_phase_in import HiddenPhaseIn
from ...models.phase_out import PhaseOut
from ...models.problem import Problem
from ...models.public_phase_in import PublicPhaseIn
from ...types import Response


def _get_kwargs(
    protocol_id: int,
    *,
    body: HiddenPhaseIn | PublicPhaseIn,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/protocols/{protocol_id}/phases".format(
            protocol_id=quote(str(protocol_id), safe=""),
        ),
    }

    if isinstance(body, PublicPhaseIn):
        _kwargs["json"] = body.to_dict()
    else:
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PhaseOut | Problem | None:
    if response.status_code == 201:
        response_201 = PhaseOut.from_dict(response.json())

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
) -> Response[PhaseOut | Problem]:
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
    body: HiddenPhaseIn | PublicPhaseIn,
) -> Response[PhaseOut | Problem]:
    """Add a phase to a protocol

     422: window ending at or before its start, hidden phase without `reveal_at` (one already
    past reveals the results at once); 409: overlapping another phase.

    Args:
        protocol_id (int):
        body (HiddenPhaseIn | PublicPhaseIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PhaseOut | Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    body: HiddenPhaseIn | PublicPhaseIn,
) -> PhaseOut | Problem | None:
    """Add a phase to a protocol

     422: window ending at or before its start, hidden phase without `reveal_at` (one already
    past reveals the results at once); 409: overlapping another phase.

    Args:
        protocol_id (int):
        body (HiddenPhaseIn | PublicPhaseIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PhaseOut | Problem
    """

    return sync_detailed(
        protocol_id=protocol_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    body: HiddenPhaseIn | PublicPhaseIn,
) -> Response[PhaseOut | Problem]:
    """Add a phase to a protocol

     422: window ending at or before its start, hidden phase without `reveal_at` (one already
    past reveals the results at once); 409: overlapping another phase.

    Args:
        protocol_id (int):
        body (HiddenPhaseIn | PublicPhaseIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PhaseOut | Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    body: HiddenPhaseIn | PublicPhaseIn,
) -> PhaseOut | Problem | None:
    """Add a phase to a protocol

     422: window ending at or before its start, hidden phase without `reveal_at` (one already
    past reveals the results at once); 409: overlapping another phase.

    Args:
        protocol_id (int):
        body (HiddenPhaseIn | PublicPhaseIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PhaseOut | Problem
    """

    return (
        await asyncio_detailed(
            protocol_id=protocol_id,
            client=client,
            body=body,
        )
    ).parsed
