from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.phase_out import PhaseOut
from ...models.phase_patch import PhasePatch
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    protocol_id: int,
    name: str,
    *,
    body: PhasePatch,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/v1/protocols/{protocol_id}/phases/{name}".format(
            protocol_id=quote(str(protocol_id), safe=""),
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PhaseOut | Problem | None:
    if response.status_code == 200:
        response_200 = PhaseOut.from_dict(response.json())

        return response_200

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
    name: str,
    *,
    client: AuthenticatedClient,
    body: PhasePatch,
) -> Response[PhaseOut | Problem]:
    """Change a phase

     Moving `reveal_at` to now reveals a hidden phase's results at once (pages, JSON, CSV;
    webhook events within one outbox relay period). A change the stored fields do not allow
    (an end before the stored start, `reveal_at` on a public phase, a reveal time after the
    events were released) is a 409 naming the rule.

    Args:
        protocol_id (int):
        name (str):
        body (PhasePatch): Fields of a phase to change (the others stay); `reveal_at` may be now
            or past (reveals
            the results at once).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PhaseOut | Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        name=name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    protocol_id: int,
    name: str,
    *,
    client: AuthenticatedClient,
    body: PhasePatch,
) -> PhaseOut | Problem | None:
    """Change a phase

     Moving `reveal_at` to now reveals a hidden phase's results at once (pages, JSON, CSV;
    webhook events within one outbox relay period). A change the stored fields do not allow
    (an end before the stored start, `reveal_at` on a public phase, a reveal time after the
    events were released) is a 409 naming the rule.

    Args:
        protocol_id (int):
        name (str):
        body (PhasePatch): Fields of a phase to change (the others stay); `reveal_at` may be now
            or past (reveals
            the results at once).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PhaseOut | Problem
    """

    return sync_detailed(
        protocol_id=protocol_id,
        name=name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    protocol_id: int,
    name: str,
    *,
    client: AuthenticatedClient,
    body: PhasePatch,
) -> Response[PhaseOut | Problem]:
    """Change a phase

     Moving `reveal_at` to now reveals a hidden phase's results at once (pages, JSON, CSV;
    webhook events within one outbox relay period). A change the stored fields do not allow
    (an end before the stored start, `reveal_at` on a public phase, a reveal time after the
    events were released) is a 409 naming the rule.

    Args:
        protocol_id (int):
        name (str):
        body (PhasePatch): Fields of a phase to change (the others stay); `reveal_at` may be now
            or past (reveals
            the results at once).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PhaseOut | Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        name=name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    protocol_id: int,
    name: str,
    *,
    client: AuthenticatedClient,
    body: PhasePatch,
) -> PhaseOut | Problem | None:
    """Change a phase

     Moving `reveal_at` to now reveals a hidden phase's results at once (pages, JSON, CSV;
    webhook events within one outbox relay period). A change the stored fields do not allow
    (an end before the stored start, `reveal_at` on a public phase, a reveal time after the
    events were released) is a 409 naming the rule.

    Args:
        protocol_id (int):
        name (str):
        body (PhasePatch): Fields of a phase to change (the others stay); `reveal_at` may be now
            or past (reveals
            the results at once).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PhaseOut | Problem
    """

    return (
        await asyncio_detailed(
            protocol_id=protocol_id,
            name=name,
            client=client,
            body=body,
        )
    ).parsed
