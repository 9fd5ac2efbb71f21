"""Protocols and their leaderboards."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from api.auth import Reader, reader_read
from api.routes.common import errors, scope
from api.schemas import DbId, LeaderboardOut, LeaderboardRow, ProtocolOut, Text
from services.platform import protocols
from services.platform.jobs.config import leaderboard_defaults
from services.platform.leaderboard import leaderboard

router = APIRouter(prefix="/v1/protocols", tags=["protocols"])

LEADERBOARD_RULES = [
    "One row per submission: its most recently finished succeeded job under this protocol.",
    "Value: the aggregate-over-seeds row (seed -1) when present, else the mean over seeds.",
    "Rows with a value come first, best first (higher_is_better decides the direction).",
    "Ties are broken by earlier submission time, then by lower submission id.",
    "Submissions whose value is missing rank last.",
    "Public submissions are listed, plus the caller's team's private ones.",
]


@router.get(
    "",
    response_model=list[ProtocolOut],
    summary="List protocols",
    responses=errors(),
    openapi_extra=scope("read"),
)
def list_protocols(
    name: Text(128) | None = Query(None, description="Only versions of this name."),  # type: ignore[valid-type]
    reader: Reader = Depends(reader_read),
) -> list[ProtocolOut]:
    """Every registered protocol version, by name then version."""
    with reader.open() as (_principal, session):
        return [ProtocolOut.of(p) for p in protocols.list_protocols(session, name=name)]


@router.get(
    "/{protocol_id}",
    response_model=ProtocolOut,
    summary="Get a protocol",
    responses=errors(404),
    openapi_extra=scope("read"),
)
def get_protocol(
    protocol_id: DbId,
    reader: Reader = Depends(reader_read),
) -> ProtocolOut:
    """One protocol version: its config and leaderboard defaults."""
    with reader.open() as (_principal, session):
        return ProtocolOut.of(protocols.get_protocol_by_id(session, protocol_id))


@router.get(
    "/{protocol_id}/leaderboard",
    response_model=LeaderboardOut,
    summary="Leaderboard of a protocol",
    responses=errors(404),
    openapi_extra=scope("read"),
)
def get_leaderboard(
    protocol_id: DbId,
    metric: Text(64) | None = Query(None, description="Default: the protocol's."),  # type: ignore[valid-type]
    scenario: Text(64) | None = Query(None, description="Default: the protocol's."),  # type: ignore[valid-type]
    backend: Text(64) | None = Query(None, description="Default: the protocol's."),  # type: ignore[valid-type]
    higher_is_better: bool | None = Query(None, description="Default: the protocol's."),
    limit: int = Query(100, ge=1, le=1000, description="Rows returned."),
    reader: Reader = Depends(reader_read),
) -> LeaderboardOut:
    """Submissions ranked by the primary metric; `rules` states the ranking rules."""
    with reader.open() as (principal, session):
        protocol = protocols.get_protocol_by_id(session, protocol_id)
        d_metric, d_scenario, d_backend, d_higher = leaderboard_defaults(protocol)
        metric = metric or d_metric
        scenario = scenario or d_scenario
        backend = backend or d_backend
        higher = d_higher if higher_is_better is None else higher_is_better
        entries = leaderboard(
            session,
            protocol.id,
            metric,
            scenario=scenario,
            backend=backend,
            higher_is_better=higher,
            viewer_team_id=principal.team_id,
            limit=limit,
        )
        return LeaderboardOut(
            protocol_id=protocol.id,
            protocol_name=protocol.name,
            protocol_version=protocol.version,
            metric=metric,
            scenario=scenario,
            backend=backend,
            higher_is_better=higher,
            rules=LEADERBOARD_RULES,
            entries=[
                LeaderboardRow(
                    rank=e.rank,
                    submission_id=e.submission_id,
                    submission_name=e.submission_name,
                    team_slug=e.team_slug,
                    job_id=e.job_id,
                    value=e.value,
                    submitted_at=e.submitted_at,
                    metrics=e.metrics,
                )
                for e in entries
            ],
        )
