from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    protocol_id: int,
    submission_id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/protocols/{protocol_id}/submissions/{submission_id}/badge.svg".format(
            protocol_id=quote(str(protocol_id), safe=""),
            submission_id=quote(str(submission_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | None:
    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 500:
        response_500 = Problem.from_dict(response.json())

        return response_500

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    protocol_id: int,
    submission_id: int,
    *,
    client: AuthenticatedClient | Client,
) -> Response[Problem]:
    """A submission's README badge (SVG)

     Worst-case semi-informed EER, the trust mark and a colour from the EER's thresholds.

    Args:
        protocol_id (int):
        submission_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        submission_id=submission_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    protocol_id: int,
    submission_id: int,
    *,
    client: AuthenticatedClient | Client,
) -> Problem | None:
    """A submission's README badge (SVG)

     Worst-case semi-informed EER, the trust mark and a colour from the EER's thresholds.

    Args:
        protocol_id (int):
        submission_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem
    """

    return sync_detailed(
        protocol_id=protocol_id,
        submission_id=submission_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    protocol_id: int,
    submission_id: int,
    *,
    client: AuthenticatedClient | Client,
) -> Response[Problem]:
    """A submission's README badge (SVG)

     Worst-case semi-informed EER, the trust mark and a colour from the EER's thresholds.

    Args:
        protocol_id (int):
        submission_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem]
    """

    kwargs = _get_kwargs(
        protocol_id=protocol_id,
        submission_id=submission_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    protocol_id: int,
    submission_id: int,
    *,
    client: AuthenticatedClient | Client,
) -> Problem | None:
    """A submission's README badge (SVG)

     Worst-case semi-informed EER, the trust mark and a colour from the EER's thresholds.

    Args:
        protocol_id (int):
        submission_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem
    """

    return (
        await asyncio_detailed(
            protocol_id=protocol_id,
            submission_id=submission_id,
            client=client,
        )
    ).parsed
