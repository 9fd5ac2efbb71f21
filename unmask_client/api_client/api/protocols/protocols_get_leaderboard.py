from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.leaderboard_out import LeaderboardOut
from ...models.problem import Problem
from ...models.protocols_get_leaderboard_backend_type_0 import (
    ProtocolsGetLeaderboardBackendType0,
)
from ...types import UNSET, Response, Unset


def _get_kwargs(
    protocol_id: int,
    *,
    metric: None | str | Unset = UNSET,
    scenario: None | str | Unset = UNSET,
    backend: None | ProtocolsGetLeaderboardBackendType0 | Unset = UNSET,
    higher_is_better: bool | None | Unset = UNSET,
    limit: int | Unset = 100,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_metric: str | Unset | None
    if isinstance(metric, Unset):
        json_metric = UNSET
    else:
        json_metric = metric
    params["metric"] = json_metric

    json_scenario: str | Unset | None
    if isinstance(scenario, Unset):
        json_scenario = UNSET
    else:
        json_scenario = scenario
    params["scenario"] = json_scenario

    json_backend: str | Unset | None
    if isinstance(backend, Unset):
        json_backend = UNSET
    elif isinstance(backend, ProtocolsGetLeaderboardBackendType0):
        json_backend = backend.value
    else:
        json_backend = backend
    params["backend"] = json_backend

    json_higher_is_better: bool | Unset | None
    if isinstance(higher_is_better, Unset):
        json_higher_is_better = UNSET
    else:
        json_higher_is_better = higher_is_better
    params["higher_is_better"] = json_higher_is_better

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/protocols/{protocol_id}/leaderboard".format(
            protocol_id=quote(str(protocol_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> LeaderboardOut | Problem | None:
    if response.status_code == 200:
        response_200 = LeaderboardOut.from_dict(response.json())

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
) -> Response[LeaderboardOut | Problem]:
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
    metric: None | str | Unset = UNSET,
    scenario: None | str | Unset = UNSET,
    backend: None | ProtocolsGetLeaderboardBackendType0 | Unset = UNSET,
    higher_is_better: bool | None | Unset = UNSET,
    limit: int | Unset = 100,
) -> Response[LeaderboardOut | Problem]:
    """Leaderboard of a protocol

     Submissions ranked by the protocol's rule (`rules`), as the leaderboard page ranks them.

    Args:
        protocol_id (int):
        metric (None | str | Unset): Default: the protocol's.
        scenario (None | str | Unset): Default: the protocol's.
        backend (None | ProtocolsGetLeaderboardBackendType0 | Unset): Default: the protocol's; one
            it does not score is a 404.
        higher_is_better (bool | None | Unset): Default: the protocol's.
        limit (int | Unset): Rows returned. Default: 100.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[LeaderboardOut | Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        metric=metric,
        scenario=scenario,
        backend=backend,
        higher_is_better=higher_is_better,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    metric: None | str | Unset = UNSET,
    scenario: None | str | Unset = UNSET,
    backend: None | ProtocolsGetLeaderboardBackendType0 | Unset = UNSET,
    higher_is_better: bool | None | Unset = UNSET,
    limit: int | Unset = 100,
) -> LeaderboardOut | Problem | None:
    """Leaderboard of a protocol

     Submissions ranked by the protocol's rule (`rules`), as the leaderboard page ranks them.

    Args:
        protocol_id (int):
        metric (None | str | Unset): Default: the protocol's.
        scenario (None | str | Unset): Default: the protocol's.
        backend (None | ProtocolsGetLeaderboardBackendType0 | Unset): Default: the protocol's; one
            it does not score is a 404.
        higher_is_better (bool | None | Unset): Default: the protocol's.
        limit (int | Unset): Rows returned. Default: 100.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        LeaderboardOut | Problem
    """

    return sync_detailed(
        protocol_id=protocol_id,
        client=client,
        metric=metric,
        scenario=scenario,
        backend=backend,
        higher_is_better=higher_is_better,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    metric: None | str | Unset = UNSET,
    scenario: None | str | Unset = UNSET,
    backend: None | ProtocolsGetLeaderboardBackendType0 | Unset = UNSET,
    higher_is_better: bool | None | Unset = UNSET,
    limit: int | Unset = 100,
) -> Response[LeaderboardOut | Problem]:
    """Leaderboard of a protocol

     Submissions ranked by the protocol's rule (`rules`), as the leaderboard page ranks them.

    Args:
        protocol_id (int):
        metric (None | str | Unset): Default: the protocol's.
        scenario (None | str | Unset): Default: the protocol's.
        backend (None | ProtocolsGetLeaderboardBackendType0 | Unset): Default: the protocol's; one
            it does not score is a 404.
        higher_is_better (bool | None | Unset): Default: the protocol's.
        limit (int | Unset): Rows returned. Default: 100.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[LeaderboardOut | Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        metric=metric,
        scenario=scenario,
        backend=backend,
        higher_is_better=higher_is_better,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    protocol_id: int,
    *,
    client: AuthenticatedClient,
    metric: None | str | Unset = UNSET,
    scenario: None | str | Unset = UNSET,
    backend: None | ProtocolsGetLeaderboardBackendType0 | Unset = UNSET,
    higher_is_better: bool | None | Unset = UNSET,
    limit: int | Unset = 100,
) -> LeaderboardOut | Problem | None:
    """Leaderboard of a protocol

     Submissions ranked by the protocol's rule (`rules`), as the leaderboard page ranks them.

    Args:
        protocol_id (int):
        metric (None | str | Unset): Default: the protocol's.
        scenario (None | str | Unset): Default: the protocol's.
        backend (None | ProtocolsGetLeaderboardBackendType0 | Unset): Default: the protocol's; one
            it does not score is a 404.
        higher_is_better (bool | None | Unset): Default: the protocol's.
        limit (int | Unset): Rows returned. Default: 100.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        LeaderboardOut | Problem
    """

    return (
        await asyncio_detailed(
            protocol_id=protocol_id,
            client=client,
            metric=metric,
            scenario=scenario,
            backend=backend,
            higher_is_better=higher_is_better,
            limit=limit,
        )
    ).parsed
