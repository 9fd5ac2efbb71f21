"""Protocols and their leaderboards."""

from __future__ import annotations

from fastapi import APIRouter, Query

from api.deps import ReadReader
from api.routes.common import errors, scope
from api.schemas import DbId, LeaderboardOut, LeaderboardRow, ProtocolOut, Text
from services.pipeline.config import Backend
from services.pipeline.stage_versions import current_scorer, is_outdated
from services.platform import protocols
from services.platform.leaderboard import UTILITY_TIERS, build_view

router = APIRouter(prefix="/v1/protocols", tags=["protocols"])

LEADERBOARD_RULES = [
    "One row per submission: its most recently finished succeeded job under this protocol.",
    "Value: the aggregate-over-seeds row (seed -1) when present, else the mean over seeds; with "
    "an attacker zoo, the value worst for the maker over its attackers.",
    "Rows are ranked by utility tier first (`tiers`, best first; a submission whose speech is "
    "unusable ranks last), then by the value within each tier.",
    "Within a tier, rows with a value come first, best first (higher_is_better decides the "
    "direction); ties are broken by earlier submission time, then by lower submission id.",
    "Submissions whose value is missing rank last within their tier.",
    "Public submissions are listed, plus the caller's team's private ones (administrators: all).",
    "The leaderboard page (/protocols/{id}) ranks by the same rule.",
]


@router.get(
    "",
    response_model=list[ProtocolOut],
    summary="List protocols",
    responses=errors(),
    openapi_extra=scope("read"),
)
def list_protocols(
    reader: ReadReader,
    name: Text(128) | None = Query(None, description="Only versions of this name."),  # type: ignore[valid-type]
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
    reader: ReadReader,
    protocol_id: DbId,
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
    reader: ReadReader,
    protocol_id: DbId,
    metric: Text(64) | None = Query(None, description="Default: the protocol's."),  # type: ignore[valid-type]
    scenario: Text(64) | None = Query(None, description="Default: the protocol's."),  # type: ignore[valid-type]
    backend: Backend | None = Query(
        None, description="Default: the protocol's; one it does not score is a 404."
    ),
    higher_is_better: bool | None = Query(None, description="Default: the protocol's."),
    limit: int = Query(100, ge=1, le=1000, description="Rows returned."),
) -> LeaderboardOut:
    """Submissions ranked by the protocol's rule (`rules`), as the leaderboard page ranks them."""
    with reader.open() as (principal, session):
        protocol = protocols.get_protocol_by_id(session, protocol_id)
        view = build_view(
            session,
            protocol,
            principal,
            backend=backend,
            metric=metric,
            scenario=scenario,
            higher_is_better=higher_is_better,
        )
        rows = view.ranked[:limit]
        scorer = current_scorer()
        return LeaderboardOut(
            protocol_id=protocol.id,
            protocol_name=protocol.name,
            protocol_version=protocol.version,
            metric=view.metric,
            scenario=view.scenario,
            backend=view.backend,
            higher_is_better=view.higher,
            rules=LEADERBOARD_RULES,
            tiers=list(UTILITY_TIERS),
            entries=[
                LeaderboardRow(
                    rank=view.ranks[r.submission_id],
                    submission_id=r.submission_id,
                    submission_name=r.submission_name,
                    team_slug=r.team_slug,
                    job_id=r.job_id,
                    value=r.values.get(view.ranking_key),
                    tier=view.tiers.get(r.submission_id, 0),
                    submitted_at=r.submitted_at,
                    # From the job's summary, stored when it succeeded (no results read).
                    metrics=r.metrics_of(view.scenario, view.backend),
                    evaluator=r.evaluator,
                    evaluator_outdated=is_outdated(r.evaluator, scorer),
                )
                for r in rows
            ],
        )
