from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.oidc_exchange_request import OidcExchangeRequest
from ...models.oidc_token_issued import OidcTokenIssued
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: OidcExchangeRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/tokens/oidc",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> OidcTokenIssued | Problem | None:
    if response.status_code == 201:
        response_201 = OidcTokenIssued.from_dict(response.json())

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
) -> Response[OidcTokenIssued | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: OidcExchangeRequest,
) -> Response[OidcTokenIssued | Problem]:
    """Exchange a CI run's OpenID Connect ID token for a short-lived submit + read token

     Verify the ID token (signature against the issuer's key set, issuer, audience, expiry,
    single use of `jti`, size) and match it against the trusted submitters; answer a token of
    the submitter's team with scopes `submit` and `read` that expires after
    `UNMASK_OIDC_TOKEN_TTL_S` seconds, and record the exchange. A token that does not verify:
    401; a verified token no trusted submitter allows (another repository, ref, environment or
    workflow; a pull-request run): 403. Either problem names the claim at fault in `claim`.

    Args:
        body (OidcExchangeRequest): An OpenID Connect ID token of a CI run (GitHub Actions, GitLab
            CI).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OidcTokenIssued | Problem]
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
    client: AuthenticatedClient | Client,
    body: OidcExchangeRequest,
) -> OidcTokenIssued | Problem | None:
    """Exchange a CI run's OpenID Connect ID token for a short-lived submit + read token

     Verify the ID token (signature against the issuer's key set, issuer, audience, expiry,
    single use of `jti`, size) and match it against the trusted submitters; answer a token of
    the submitter's team with scopes `submit` and `read` that expires after
    `UNMASK_OIDC_TOKEN_TTL_S` seconds, and record the exchange. A token that does not verify:
    401; a verified token no trusted submitter allows (another repository, ref, environment or
    workflow; a pull-request run): 403. Either problem names the claim at fault in `claim`.

    Args:
        body (OidcExchangeRequest): An OpenID Connect ID token of a CI run (GitHub Actions, GitLab
            CI).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OidcTokenIssued | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: OidcExchangeRequest,
) -> Response[OidcTokenIssued | Problem]:
    """Exchange a CI run's OpenID Connect ID token for a short-lived submit + read token

     Verify the ID token (signature against the issuer's key set, issuer, audience, expiry,
    single use of `jti`, size) and match it against the trusted submitters; answer a token of
    the submitter's team with scopes `submit` and `read` that expires after
    `UNMASK_OIDC_TOKEN_TTL_S` seconds, and record the exchange. A token that does not verify:
    401; a verified token no trusted submitter allows (another repository, ref, environment or
    workflow; a pull-request run): 403. Either problem names the claim at fault in `claim`.

    Args:
        body (OidcExchangeRequest): An OpenID Connect ID token of a CI run (GitHub Actions, GitLab
            CI).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OidcTokenIssued | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: OidcExchangeRequest,
) -> OidcTokenIssued | Problem | None:
    """Exchange a CI run's OpenID Connect ID token for a short-lived submit + read token

     Verify the ID token (signature against the issuer's key set, issuer, audience, expiry,
    single use of `jti`, size) and match it against the trusted submitters; answer a token of
    the submitter's team with scopes `submit` and `read` that expires after
    `UNMASK_OIDC_TOKEN_TTL_S` seconds, and record the exchange. A token that does not verify:
    401; a verified token no trusted submitter allows (another repository, ref, environment or
    workflow; a pull-request run): 403. Either problem names the claim at fault in `claim`.

    Args:
        body (OidcExchangeRequest): An OpenID Connect ID token of a CI run (GitHub Actions, GitLab
            CI).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OidcTokenIssued | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
