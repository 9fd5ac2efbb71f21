"""Trusted submitters: CI workflows that exchange an OpenID Connect ID token for a short-lived
API token of a team, so the repository stores no Unmask secret (PyPI's trusted publishing).

An administrator registers, for a team, an issuer and a repository by id (the name is shown and
kept for the record; a renamed or re-created repository of the same name does not match), with
optional constraints on the owner id, the ref (``refs/heads/main``), the deployment environment
and the workflow file (``.github/workflows/privacy.yml``). :func:`exchange` takes a verified ID
token (``oidc.verify_id_token``), finds a submitter whose constraints all hold, refuses pull- and
merge-request events unless the submitter allows them (GitHub's ID token does not say whether a
pull request comes from a fork, so every pull-request event counts), records the audit row (whose
unique ``(issuer, jti)`` makes each ID token single-use) and issues a ``submit`` + ``read`` token
that expires after ``ttl_s`` seconds. Every function takes an open session first and leaves
committing to the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from services.platform.identity.oidc import IdTokenForbidden, IdTokenRefused, VerifiedIdToken
from services.platform.identity.service import (
    IssuedToken,
    get_or_create_user,
    get_team_by_slug,
    issue_token,
    team_robot_email,
)
from services.platform.rows import get_row
from services.storage.errors import ConflictError
from services.storage.models import OidcExchange, Team, TokenScope, TrustedSubmitter

EXCHANGED_SCOPES: tuple[str, ...] = (TokenScope.SUBMIT.value, TokenScope.READ.value)


def register_trusted_submitter(
    session: Session,
    team_slug: str,
    *,
    issuers: Mapping[str, str],
    issuer: str,
    repository: str,
    repository_id: str,
    repository_owner_id: str | None = None,
    ref: str | None = None,
    environment: str | None = None,
    workflow: str | None = None,
    allow_pull_requests: bool = False,
    name: str = "",
) -> TrustedSubmitter:
    """A new trusted submitter of team ``team_slug``; ``issuer`` must be one of ``issuers``
    (``Settings.oidc_issuers``), else :class:`ConflictError`."""
    if issuer not in issuers:
        raise ConflictError(
            f"issuer {issuer!r} is not configured (UNMASK_OIDC_ISSUERS: {', '.join(issuers)})"
        )
    team = get_team_by_slug(session, team_slug)
    submitter = TrustedSubmitter(
        team_id=team.id,
        name=name,
        issuer=issuer,
        repository=repository,
        repository_id=repository_id,
        repository_owner_id=repository_owner_id,
        ref=ref,
        environment=environment,
        workflow=workflow,
        allow_pull_requests=allow_pull_requests,
    )
    session.add(submitter)
    session.flush()
    return submitter


def list_trusted_submitters(session: Session, team_id: int | None = None) -> list[TrustedSubmitter]:
    """Every trusted submitter (of ``team_id`` when given), oldest first."""
    query = select(TrustedSubmitter).order_by(TrustedSubmitter.id)
    if team_id is not None:
        query = query.where(TrustedSubmitter.team_id == team_id)
    return list(session.scalars(query))


def delete_trusted_submitter(session: Session, submitter_id: int) -> None:
    """Remove a trusted submitter (its audit rows stay); :class:`NotFoundError` if unknown."""
    submitter = get_row(session, TrustedSubmitter, submitter_id, noun="trusted submitter")
    session.delete(submitter)
    session.flush()


def _mismatch(submitter: TrustedSubmitter, token: VerifiedIdToken) -> tuple[str, str] | None:
    """The first (claim, reason) of ``token`` that ``submitter`` does not allow, or None."""
    run = token.run
    checks: Sequence[tuple[str, str | None, str | None]] = (
        ("repository_owner_id", submitter.repository_owner_id, run.owner_id),
        ("ref", submitter.ref, run.ref),
        ("environment", submitter.environment, run.environment),
        ("workflow_ref", submitter.workflow, run.workflow),
    )
    for claim, wanted, got in checks:
        if wanted is not None and wanted != got:
            return claim, f"is {got!r}; the trusted submitter requires {wanted!r}"
    if run.pull_request and not submitter.allow_pull_requests:
        return "event_name", (
            f"is {run.event_name!r}: pull-request runs may not submit for this repository "
            "(the trusted submitter does not allow pull requests)"
        )
    return None


def matching_submitter(session: Session, token: VerifiedIdToken) -> TrustedSubmitter:
    """The trusted submitter ``token`` satisfies, or :class:`IdTokenForbidden` naming the claim
    that matched no policy."""
    candidates = list(
        session.scalars(
            select(TrustedSubmitter)
            .where(
                TrustedSubmitter.issuer == token.issuer,
                TrustedSubmitter.repository_id == token.run.repository_id,
            )
            .order_by(TrustedSubmitter.id)
        )
    )
    if not candidates:
        raise IdTokenForbidden(
            "repository_id",
            f"{token.run.repository_id!r} ({token.run.repository}) has no trusted submitter "
            f"for issuer {token.issuer}",
        )
    first_reason: tuple[str, str] | None = None
    for submitter in candidates:
        reason = _mismatch(submitter, token)
        if reason is None:
            return submitter
        first_reason = first_reason or reason
    assert first_reason is not None
    raise IdTokenForbidden(*first_reason)


@dataclass(frozen=True)
class Exchanged:
    """The outcome of an exchange: the issued token (plaintext shown once), the audit row, the
    team's slug."""

    issued: IssuedToken
    audit: OidcExchange
    team_slug: str


def exchange(session: Session, token: VerifiedIdToken, *, hmac_key: str, ttl_s: float) -> Exchanged:
    """Exchange a verified ID token for a ``submit`` + ``read`` token of the matching submitter's
    team, valid ``ttl_s`` seconds; a ``jti`` already exchanged is :class:`IdTokenRefused`."""
    submitter = matching_submitter(session, token)
    already = session.scalar(
        select(OidcExchange.id).where(
            OidcExchange.issuer == token.issuer, OidcExchange.jti == token.jti
        )
    )
    if already is not None:
        raise IdTokenRefused("jti", f"{token.jti!r} was already exchanged (single use)")
    run = token.run
    audit = OidcExchange(
        team_id=submitter.team_id,
        trusted_submitter_id=submitter.id,
        issuer=token.issuer,
        jti=token.jti,
        subject=token.subject,
        repository=run.repository[:256],
        ref=None if run.ref is None else run.ref[:256],
        run_id=None if run.run_id is None else run.run_id[:64],
        event_name=None if run.event_name is None else run.event_name[:64],
        id_token_expires_at=token.expires_at,
    )
    try:
        with session.begin_nested():  # a concurrent exchange of the same jti loses here
            session.add(audit)
            session.flush()
    except IntegrityError:
        raise IdTokenRefused("jti", f"{token.jti!r} was already exchanged (single use)") from None
    slug = get_row(session, Team, submitter.team_id).slug
    user = get_or_create_user(session, submitter.team_id, team_robot_email(slug))
    name = f"oidc: {run.repository}" + (f" run {run.run_id}" if run.run_id else "")
    issued = issue_token(
        session,
        user.id,
        hmac_key=hmac_key,
        scopes=EXCHANGED_SCOPES,
        name=name[:200],
        expires_in_s=ttl_s,
    )
    audit.token_id = issued.token.id
    session.flush()
    return Exchanged(issued=issued, audit=audit, team_slug=slug)


__all__ = [
    "EXCHANGED_SCOPES",
    "Exchanged",
    "delete_trusted_submitter",
    "exchange",
    "list_trusted_submitters",
    "matching_submitter",
    "register_trusted_submitter",
]
