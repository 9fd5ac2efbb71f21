"""Challenge phases of a protocol: windows, per-team limits, results hidden until a reveal.

A protocol without phases accepts jobs at any time and shows results as they finish. With phases,
a job is created in one phase (named, or the one open now); after the phase's ``ends_at`` it is
refused (:class:`PhaseClosedError`, 409 naming the phase), and a team may create at most
``submission_limit`` charged jobs in it (failed and cancelled jobs, and administrators' uncharged
re-runs, do not count).

A ``hidden`` phase keeps its results to the submitting team and administrators until
``reveal_at``. Nothing is copied or moved at the reveal: readers filter at read time with
:func:`revealed_jobs_clause` / :func:`hidden_from`, so the leaderboard shows the results the
moment the clock passes ``reveal_at`` (or an administrator moves it), without a restart. Webhook
events of hidden jobs are held back and recorded at the reveal
(``services.platform.webhooks.release_held_events``, from the periodic outbox relay).

Functions take the caller's session first; they flush, never commit.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, false, func, or_, select
from sqlalchemy.orm import Session

from services.platform.phases.errors import (
    PhaseClosedError,
    PhaseDefinitionError,
    PhaseInUseError,
    PhaseKindError,
    PhaseLimitError,
    PhaseOverlapError,
    PhaseUpdateConflictError,
    PhaseWindowError,
)
from services.storage.errors import NotFoundError
from services.storage.models import SUBMISSION_KIND_VALUES, Job, Phase, PhaseVisibility
from services.storage.types import utc_now
from services.vocab import RunState

# Jobs that do not count against a phase's submission limit (as for the daily job quota).
NOT_CHARGED_STATES = (RunState.FAILED.value, RunState.CANCELLED.value)


@dataclass(frozen=True)
class PhaseSpec:
    """What an administrator sets on a phase (times timezone-aware)."""

    name: str
    starts_at: dt.datetime
    ends_at: dt.datetime | None = None
    submission_limit: int | None = None
    visibility: str = PhaseVisibility.PUBLIC.value
    reveal_at: dt.datetime | None = None
    allowed_kinds: list[str] | None = None
    """Submission kinds whose jobs the phase accepts; None: every kind."""


def _aware(value: dt.datetime | None, field: str) -> dt.datetime | None:
    if value is not None and value.tzinfo is None:
        raise PhaseDefinitionError(f"{field} needs a time zone (e.g. 2026-12-01T00:00:00Z)")
    return value


def _check_spec(spec: PhaseSpec) -> None:
    if not spec.name or len(spec.name) > 64:
        raise PhaseDefinitionError("name: 1 to 64 characters")
    _aware(spec.starts_at, "starts_at")
    _aware(spec.ends_at, "ends_at")
    _aware(spec.reveal_at, "reveal_at")
    if spec.ends_at is not None and spec.ends_at <= spec.starts_at:
        raise PhaseWindowError(
            "body.ends_at",
            f"phase {spec.name!r} would end ({spec.ends_at.isoformat()}) before it starts "
            f"({spec.starts_at.isoformat()}): ends_at must be after starts_at",
        )
    if spec.submission_limit is not None and spec.submission_limit < 1:
        raise PhaseDefinitionError(
            f"phase {spec.name!r}: submission_limit must be at least 1 (leave it out for none)"
        )
    if spec.allowed_kinds is not None:
        unknown = [k for k in spec.allowed_kinds if k not in SUBMISSION_KIND_VALUES]
        if not spec.allowed_kinds or unknown:
            raise PhaseDefinitionError(
                f"phase {spec.name!r}: allowed_kinds must list some of "
                f"{', '.join(SUBMISSION_KIND_VALUES)} (leave it out for every kind)"
            )
    try:
        visibility = PhaseVisibility(spec.visibility)
    except ValueError:
        raise PhaseDefinitionError(
            f"phase {spec.name!r}: visibility {spec.visibility!r} is not one of "
            f"{', '.join(v.value for v in PhaseVisibility)}"
        ) from None
    if visibility is PhaseVisibility.HIDDEN and spec.reveal_at is None:
        raise PhaseDefinitionError(f"phase {spec.name!r}: a hidden phase needs reveal_at")
    if visibility is PhaseVisibility.PUBLIC and spec.reveal_at is not None:
        raise PhaseDefinitionError(
            f"phase {spec.name!r}: reveal_at applies to hidden phases only (visibility 'hidden')"
        )


def _overlaps(a_start: dt.datetime, a_end: dt.datetime | None, phase: Phase) -> bool:
    """Whether [a_start, a_end) and the phase's window share an instant (None: open-ended)."""
    starts_before_other_ends = phase.ends_at is None or a_start < phase.ends_at
    other_starts_before_end = a_end is None or phase.starts_at < a_end
    return starts_before_other_ends and other_starts_before_end


def list_phases(session: Session, protocol_id: int) -> list[Phase]:
    """The protocol's phases in order (by start)."""
    return list(
        session.scalars(
            select(Phase).where(Phase.protocol_id == protocol_id).order_by(Phase.position)
        )
    )


def get_phase(session: Session, protocol_id: int, name: str) -> Phase:
    """Phase ``name`` of the protocol; :class:`NotFoundError` naming the known ones."""
    phase = session.scalar(
        select(Phase).where(Phase.protocol_id == protocol_id, Phase.name == name)
    )
    if phase is None:
        known = ", ".join(p.name for p in list_phases(session, protocol_id)) or "none"
        raise NotFoundError(f"protocol {protocol_id} has no phase {name!r} (phases: {known})")
    return phase


def _check_no_overlap(
    session: Session, protocol_id: int, spec: PhaseSpec, own_id: int | None
) -> None:
    for other in list_phases(session, protocol_id):
        if other.id == own_id:
            continue
        if other.name == spec.name:
            raise PhaseOverlapError(f"protocol {protocol_id} already has a phase {spec.name!r}")
        if _overlaps(spec.starts_at, spec.ends_at, other):
            end = other.ends_at.isoformat() if other.ends_at else "open end"
            raise PhaseOverlapError(
                f"phase {spec.name!r} overlaps phase {other.name!r} "
                f"({other.starts_at.isoformat()} to {end}); phases of a protocol must not overlap"
            )


def _renumber(session: Session, protocol_id: int) -> None:
    session.flush()
    ordered = session.scalars(
        select(Phase).where(Phase.protocol_id == protocol_id).order_by(Phase.starts_at, Phase.id)
    ).all()
    for position, phase in enumerate(ordered):
        phase.position = position
    session.flush()


def create_phase(session: Session, *, protocol_id: int, spec: PhaseSpec) -> Phase:
    """Add a phase to the protocol (ordered by start); refuses an invalid definition
    (:class:`PhaseDefinitionError`, :class:`PhaseWindowError`) and an overlap
    (:class:`PhaseOverlapError`). A hidden phase whose ``reveal_at`` has passed shows its
    results at once, as when an update moves ``reveal_at`` to the past."""
    _check_spec(spec)
    _check_no_overlap(session, protocol_id, spec, None)
    phase = Phase(
        protocol_id=protocol_id,
        name=spec.name,
        position=0,
        starts_at=spec.starts_at,
        ends_at=spec.ends_at,
        submission_limit=spec.submission_limit,
        visibility=spec.visibility,
        reveal_at=spec.reveal_at,
        allowed_kinds=None if spec.allowed_kinds is None else list(spec.allowed_kinds),
    )
    session.add(phase)
    _renumber(session, protocol_id)
    return phase


def update_phase(session: Session, *, phase: Phase, changes: dict[str, Any]) -> Phase:
    """Change some of a phase's fields (``PhaseSpec`` names); the result is checked like a new
    phase, except that ``reveal_at`` may be now or past (that reveals the results now)."""
    unknown = sorted(set(changes) - set(PhaseSpec.__dataclass_fields__))
    if unknown:
        raise PhaseDefinitionError(f"unknown phase fields: {', '.join(unknown)}")
    for required in ("starts_at", "visibility"):
        if required in changes and changes[required] is None:
            raise PhaseDefinitionError(f"phase {phase.name!r}: {required} cannot be removed")
    for field in ("starts_at", "ends_at", "reveal_at"):
        _aware(changes.get(field), field)
    current = {name: getattr(phase, name) for name in PhaseSpec.__dataclass_fields__}
    if changes.get("visibility") == PhaseVisibility.PUBLIC.value and "reveal_at" not in changes:
        changes = {**changes, "reveal_at": None}
    spec = PhaseSpec(**{**current, **changes})
    try:
        _check_spec(spec)
    except PhaseDefinitionError as exc:
        # The change is checked together with the phase's stored fields: what they make
        # invalid is a conflict with the stored phase (409), not a malformed change.
        raise PhaseUpdateConflictError(f"{exc} (with the phase's stored fields)") from None
    _check_no_overlap(session, phase.protocol_id, spec, phase.id)
    if spec.reveal_at != phase.reveal_at and (
        phase.events_released_at is not None and spec.reveal_at is not None
    ):
        # A reveal moved after its events went out: they stay out (a result cannot be unsent).
        raise PhaseUpdateConflictError(
            f"phase {phase.name!r} was revealed at {phase.events_released_at.isoformat()}; its "
            "reveal time can no longer change"
        )
    for name in PhaseSpec.__dataclass_fields__:
        setattr(phase, name, getattr(spec, name))
    _renumber(session, phase.protocol_id)
    return phase


def delete_phase(session: Session, *, phase: Phase) -> None:
    """Remove a phase that has no jobs (:class:`PhaseInUseError` otherwise)."""
    used = session.scalar(select(func.count(Job.id)).where(Job.phase_id == phase.id)) or 0
    if used:
        raise PhaseInUseError(
            f"phase {phase.name!r} has {used} jobs and cannot be deleted; end it instead"
        )
    protocol_id = phase.protocol_id
    session.delete(phase)
    _renumber(session, protocol_id)


# --- the rules at job creation --------------------------------------------------------------------


def phase_for_new_job(
    session: Session,
    *,
    protocol_id: int,
    team_id: int,
    name: str | None = None,
    now: dt.datetime | None = None,
    kind: str | None = None,
) -> Phase | None:
    """The phase a new job of ``team_id`` goes into, checked: ``name``'s, or the one open now.
    ``kind``: the submission's kind, which the phase must accept (:class:`PhaseKindError`).

    None when the protocol has no phases (and no ``name`` was asked for). Raises
    :class:`PhaseClosedError` (not started, ended, or no phase open), :class:`PhaseLimitError`
    and :class:`NotFoundError` (no such phase). The caller holds the team lock, so concurrent
    jobs of one team are counted one after the other.
    """
    now = now or utc_now()
    phases = list_phases(session, protocol_id)
    if not phases:
        if name is not None:
            raise NotFoundError(f"protocol {protocol_id} has no phases (asked for {name!r})")
        return None
    if name is not None:
        phase = get_phase(session, protocol_id, name)
    else:
        open_now = [p for p in phases if is_open(p, now)]
        if not open_now:
            raise PhaseClosedError(_none_open(protocol_id, phases, now))
        phase = open_now[0]
    if now < phase.starts_at:
        raise PhaseClosedError(
            f"phase {phase.name!r} opens at {phase.starts_at.isoformat()}; not accepting jobs yet"
        )
    if phase.ends_at is not None and now >= phase.ends_at:
        raise PhaseClosedError(
            f"phase {phase.name!r} ended at {phase.ends_at.isoformat()}; it accepts no more jobs"
        )
    if kind is not None and phase.allowed_kinds is not None and kind not in phase.allowed_kinds:
        raise PhaseKindError(
            f"phase {phase.name!r} accepts {' and '.join(phase.allowed_kinds)} submissions only; "
            f"this submission is a {kind}"
        )
    if phase.submission_limit is not None:
        used = charged_jobs_in_phase(session, phase_id=phase.id, team_id=team_id)
        if used >= phase.submission_limit:
            raise PhaseLimitError(
                f"phase {phase.name!r} allows {phase.submission_limit} jobs per team and the "
                f"team has {used} (failed and cancelled jobs are not counted)"
            )
    return phase


def charged_jobs_in_phase(session: Session, *, phase_id: int, team_id: int) -> int:
    """Jobs of the team in the phase that count against its submission limit."""
    return int(
        session.scalar(
            select(func.count(Job.id)).where(
                Job.phase_id == phase_id,
                Job.team_id == team_id,
                Job.charged.is_(True),
                Job.state.not_in(NOT_CHARGED_STATES),
            )
        )
        or 0
    )


def is_open(phase: Phase, now: dt.datetime) -> bool:
    """Whether the phase accepts jobs at ``now``."""
    return phase.starts_at <= now and (phase.ends_at is None or now < phase.ends_at)


def _none_open(protocol_id: int, phases: list[Phase], now: dt.datetime) -> str:
    """Why no phase accepts a job now, naming the phase that ended last and the next one."""
    ended = [p for p in phases if p.ends_at is not None and p.ends_at <= now]
    upcoming = [p for p in phases if now < p.starts_at]
    parts = []
    if ended:
        last = max(ended, key=lambda p: p.ends_at or now)
        parts.append(f"phase {last.name!r} ended at {_iso(last.ends_at)}")
    if upcoming:
        following = min(upcoming, key=lambda p: p.starts_at)
        parts.append(f"phase {following.name!r} opens at {_iso(following.starts_at)}")
    reason = "; ".join(parts) or "; ".join(_window_text(p) for p in phases)
    return f"no phase of protocol {protocol_id} accepts jobs now: {reason}"


def _iso(value: dt.datetime | None) -> str:
    return value.isoformat() if value is not None else "no end"


def _window_text(phase: Phase) -> str:
    end = phase.ends_at.isoformat() if phase.ends_at else "no end"
    return f"{phase.name}: {phase.starts_at.isoformat()} to {end}"


# --- visibility of results ------------------------------------------------------------------------


def is_hidden(phase: Phase | None, now: dt.datetime | None = None) -> bool:
    """Whether the phase's results are still hidden from everyone but their team and admins."""
    if phase is None or phase.visibility != PhaseVisibility.HIDDEN.value:
        return False
    return phase.reveal_at is None or (now or utc_now()) < phase.reveal_at


def hidden_phase_ids(now: dt.datetime | None = None) -> Any:
    """SQL subquery: ids of the phases whose results are hidden at ``now``."""
    return select(Phase.id).where(
        Phase.visibility == PhaseVisibility.HIDDEN.value,
        or_(Phase.reveal_at.is_(None), Phase.reveal_at > (now or utc_now())),
    )


def revealed_jobs_clause(
    *, viewer_team_id: int | None = None, include_all: bool = False, now: dt.datetime | None = None
) -> ColumnElement[bool]:
    """SQL condition on :class:`Job`: the jobs whose results the viewer may see now.

    Jobs outside a hidden phase, the viewer team's own, and (``include_all``: administrators)
    every job. Evaluated at read time, so a reveal needs no restart.
    """
    if include_all:
        return Job.id.is_not(None)
    own = Job.team_id == viewer_team_id if viewer_team_id is not None else false()
    return or_(Job.phase_id.is_(None), Job.phase_id.not_in(hidden_phase_ids(now)), own)


def hidden_from(
    session: Session, job: Job, *, viewer_team_id: int | None, is_admin: bool = False
) -> bool:
    """Whether ``job``'s results are hidden from the viewer now (not its team, not an admin)."""
    if is_admin or job.phase_id is None or job.team_id == viewer_team_id:
        return False
    return is_hidden(session.get(Phase, job.phase_id))


def withholds_events(session: Session, job: Job, now: dt.datetime | None = None) -> bool:
    """Whether ``job``'s webhook events wait for its phase's reveal."""
    return job.phase_id is not None and is_hidden(session.get(Phase, job.phase_id), now)


def phases_due_for_release(session: Session, now: dt.datetime | None = None) -> list[Phase]:
    """Hidden phases revealed by ``now`` whose held-back events are not released yet, locked
    (``SKIP LOCKED``: two relays never release one phase twice)."""
    return list(
        session.scalars(
            select(Phase)
            .where(
                Phase.visibility == PhaseVisibility.HIDDEN.value,
                Phase.reveal_at <= (now or utc_now()),
                Phase.events_released_at.is_(None),
            )
            .order_by(Phase.id)
            .with_for_update(skip_locked=True)
        )
    )
