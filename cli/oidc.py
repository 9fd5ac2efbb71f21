"""The OpenID Connect token exchange of ``unmask submit``: it lives in the ``unmask-client``
distribution (``unmask_client.oidc``, so integrators' CI needs only that package); re-exported
here for the CLI."""

from unmask_client.oidc import (
    AUDIENCE_ENV,
    EXCHANGE_PATH,
    REFRESH_MARGIN_S,
    REQUEST_TOKEN_ENV,
    REQUEST_URL_ENV,
    GitHubOidcTokenSource,
    OidcExchangeError,
    github_oidc_available,
)

__all__ = [
    "AUDIENCE_ENV",
    "EXCHANGE_PATH",
    "REFRESH_MARGIN_S",
    "REQUEST_TOKEN_ENV",
    "REQUEST_URL_ENV",
    "GitHubOidcTokenSource",
    "OidcExchangeError",
    "github_oidc_available",
]
