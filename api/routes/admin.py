"""The caller's identity (`/v1/me`) and the admin routes (teams, tokens, trusted submitters,
protocols)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from api.deps import AdminPrincipal, AnyReader, ContextDep
from api.routes.common import errors, scope
from api.schemas import (
    DbId,
    Me,
    ProtocolCreate,
    ProtocolOut,
    Quotas,
    TeamCreate,
    TeamOut,
    TokenCreate,
    TokenIssued,
    TokenOut,
    TrustedSubmitterCreate,
    TrustedSubmitterOut,
)
from services.platform import identity, protocols, quotas
from services.platform.identity import trusted
from services.platform.jobs.config import validate_protocol_config

SECONDS_PER_DAY = 86_400

router = APIRouter(prefix="/v1")


@router.get(
    "/me",
    response_model=Me,
    tags=["identity"],
    summary="Who am I: token, team, scopes, quota usage",
    responses=errors(),
    openapi_extra=scope("any"),
)
def me(
    reader: AnyReader,
    context: ContextDep,
) -> Me:
    """The calling token's team and scopes, and the team's quota limits and usage."""
    with reader.open() as (principal, session):
        report = quotas.team_quotas(session, settings=context.settings, team_id=principal.team_id)
        return Me(
            token_prefix=principal.token_prefix,
            user_id=principal.user_id,
            team_id=principal.team_id,
            team_slug=principal.team_slug,
            scopes=list(principal.scopes),
            quotas=Quotas.of(report),
        )


@router.post(
    "/admin/teams",
    response_model=TeamOut,
    status_code=status.HTTP_201_CREATED,
    tags=["admin"],
    summary="Create a team",
    responses=errors(409),
    openapi_extra=scope("admin"),
)
def create_team(
    _admin: AdminPrincipal,
    context: ContextDep,
    body: TeamCreate,
) -> TeamOut:
    """A new team; 409 when the slug is taken."""
    with context.database.session_scope() as session:
        team = identity.create_team(session, body.slug, body.display_name)
        return TeamOut(
            id=team.id, slug=team.slug, display_name=team.display_name, created_at=team.created_at
        )


@router.post(
    "/admin/tokens",
    response_model=TokenIssued,
    status_code=status.HTTP_201_CREATED,
    tags=["admin"],
    summary="Issue an API token for a team (plaintext returned once)",
    responses=errors(404, 409),
    openapi_extra=scope("admin"),
)
def create_token(
    _admin: AdminPrincipal,
    context: ContextDep,
    body: TokenCreate,
) -> TokenIssued:
    """Issue a token; `token` in the answer is the only time the plaintext is shown."""
    with context.database.session_scope() as session:
        issued = identity.issue_team_token(
            session,
            body.team,
            hmac_key=context.settings.token_hmac_key,
            scopes=body.scopes,
            name=body.name,
            expires_in_s=None if body.expires_days is None else body.expires_days * SECONDS_PER_DAY,
            email=body.email,
        )
        out = TokenOut.of(issued.token)
        return TokenIssued(**out.model_dump(), token=issued.plaintext)


@router.post(
    "/admin/tokens/{token_id}/revoke",
    response_model=TokenOut,
    tags=["admin"],
    summary="Revoke an API token",
    responses=errors(404, 409),
    openapi_extra=scope("admin"),
)
def revoke_token(
    admin: AdminPrincipal,
    context: ContextDep,
    token_id: DbId,
) -> TokenOut:
    """Revoke a token at once (idempotent: the first revocation time is kept). 409 for the
    token making the request and for the last valid admin token."""
    with context.database.session_scope() as session:
        return TokenOut.of(identity.revoke_token(session, token_id, by_token_id=admin.token_id))


@router.post(
    "/admin/protocols",
    response_model=ProtocolOut,
    status_code=status.HTTP_201_CREATED,
    tags=["admin"],
    summary="Register a protocol (or a new version of one)",
    responses={
        **errors(409),
        200: {
            "model": ProtocolOut,
            "description": "Same content as the latest version: that version, unchanged.",
        },
    },
    openapi_extra=scope("admin"),
)
def register_protocol(
    _admin: AdminPrincipal,
    context: ContextDep,
    body: ProtocolCreate,
    response: Response,
) -> ProtocolOut:
    """Validate the config (as an EvaluationConfig without anonymizer) and store it.

    The same name with new content becomes the next version; the same content as the latest
    version returns that version (200).
    """
    config = validate_protocol_config(body.config)
    stored = {
        "config": config,
        "leaderboard": body.leaderboard.model_dump(mode="json"),
    }
    if body.limits.stored():
        # Only when set: bodies without limits keep their content hash.
        stored["limits"] = body.limits.stored()
    with context.database.session_scope() as session:
        before = {p.id for p in protocols.list_protocols(session, name=body.name)}
        protocol = protocols.create_protocol(
            session, body.name, body=stored, description=body.description
        )
        if protocol.id in before:
            response.status_code = status.HTTP_200_OK
        return ProtocolOut.of(protocol)


@router.post(
    "/admin/trusted-submitters",
    response_model=TrustedSubmitterOut,
    status_code=status.HTTP_201_CREATED,
    tags=["admin"],
    summary="Trust a CI workflow to submit for a team with its OpenID Connect ID token",
    responses=errors(404, 409),
    openapi_extra=scope("admin"),
)
def create_trusted_submitter(
    _admin: AdminPrincipal,
    context: ContextDep,
    body: TrustedSubmitterCreate,
) -> TrustedSubmitterOut:
    """Register a trusted submitter: its runs exchange ID tokens at `POST /v1/tokens/oidc` for
    short-lived `submit` + `read` tokens of the team (docs/ci.md). 409 for an issuer not in
    `UNMASK_OIDC_ISSUERS`, 404 for an unknown team."""
    with context.database.session_scope() as session:
        row = trusted.register_trusted_submitter(
            session,
            body.team,
            issuers=context.settings.oidc_issuers,
            issuer=body.issuer,
            repository=body.repository,
            repository_id=body.repository_id,
            repository_owner_id=body.repository_owner_id,
            ref=body.ref,
            environment=body.environment,
            workflow=body.workflow,
            allow_pull_requests=body.allow_pull_requests,
            name=body.name,
        )
        return TrustedSubmitterOut.of(row)


@router.get(
    "/admin/trusted-submitters",
    response_model=list[TrustedSubmitterOut],
    tags=["admin"],
    summary="List trusted submitters",
    responses=errors(),
    openapi_extra=scope("admin"),
)
def list_trusted_submitters(
    _admin: AdminPrincipal,
    context: ContextDep,
) -> list[TrustedSubmitterOut]:
    """Every trusted submitter, oldest first."""
    with context.database.session_scope() as session:
        return [TrustedSubmitterOut.of(row) for row in trusted.list_trusted_submitters(session)]


@router.delete(
    "/admin/trusted-submitters/{submitter_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    tags=["admin"],
    summary="Stop trusting a CI workflow",
    responses=errors(404),
    openapi_extra=scope("admin"),
)
def delete_trusted_submitter(
    _admin: AdminPrincipal,
    context: ContextDep,
    submitter_id: DbId,
) -> Response:
    """Remove a trusted submitter (tokens it already obtained expire on their own; revoke them
    with `POST /v1/admin/tokens/{id}/revoke` to end them at once)."""
    with context.database.session_scope() as session:
        trusted.delete_trusted_submitter(session, submitter_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
