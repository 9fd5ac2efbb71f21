"""`POST /v1/tokens/oidc`: a CI run's OpenID Connect ID token for a short-lived API token."""

from __future__ import annotations

from fastapi import APIRouter, Request, status

from api.auth import counting_failures
from api.auth_limits import client_address
from api.deps import ContextDep
from api.problems import problem_responses
from api.schemas import OidcExchangeRequest, OidcTokenIssued
from services.platform.identity import oidc, trusted

router = APIRouter(prefix="/v1")


@router.post(
    "/tokens/oidc",
    response_model=OidcTokenIssued,
    status_code=status.HTTP_201_CREATED,
    tags=["identity"],
    summary="Exchange a CI run's OpenID Connect ID token for a short-lived submit + read token",
    responses=problem_responses(401, 403, 422, 429, 500),
    openapi_extra={"x-required-scope": "none (the ID token is the credential)"},
)
def exchange_oidc_token(
    request: Request,
    context: ContextDep,
    body: OidcExchangeRequest,
) -> OidcTokenIssued:
    """Verify the ID token (signature against the issuer's key set, issuer, audience, expiry,
    single use of `jti`, size) and match it against the trusted submitters; answer a token of
    the submitter's team with scopes `submit` and `read` that expires after
    `UNMASK_OIDC_TOKEN_TTL_S` seconds, and record the exchange. A token that does not verify:
    401; a verified token no trusted submitter allows (another repository, ref, environment or
    workflow; a pull-request run): 403. Either problem names the claim at fault in `claim`."""
    settings = context.settings
    with counting_failures(context, client_address(request)):
        audience = settings.oidc_expected_audience()
        if not audience:
            raise oidc.IdTokenRefused(
                "aud",
                "cannot be checked: the server sets neither UNMASK_OIDC_AUDIENCE nor "
                "UNMASK_PUBLIC_URL",
            )
        verified = oidc.verify_id_token(
            body.token,
            issuers=settings.oidc_issuers,
            audience=audience,
            key_sets=context.oidc_key_sets,
            leeway_s=settings.oidc_leeway_s,
            max_bytes=settings.oidc_max_id_token_bytes,
        )
        with context.database.session_scope() as session:
            done = trusted.exchange(
                session,
                verified,
                hmac_key=settings.token_hmac_key,
                ttl_s=settings.oidc_token_ttl_s,
            )
            token = done.issued.token
            assert token.expires_at is not None
            return OidcTokenIssued(
                token=done.issued.plaintext,
                prefix=token.prefix,
                team_slug=done.team_slug,
                scopes=list(token.scopes),
                expires_at=token.expires_at,
                exchange_id=done.audit.id,
                repository=done.audit.repository,
                ref=done.audit.ref,
                run_id=done.audit.run_id,
            )
