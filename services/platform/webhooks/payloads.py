"""Job events: their JSON payloads, and the deliveries (plus outbox messages) they create.

When a job reaches a terminal state, :func:`record_job_event` (called by
:func:`react_to_job_transition`, a listener of the job's state change)
adds one ``webhook_deliveries`` row per subscribed endpoint of the job's team and, for each, an
outbox message that queues its first attempt, all *in the same transaction*: an event exists
exactly when the state change committed, and is sent after the commit (services/platform/outbox/).
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from services.metrics import catalogue
from services.platform.leaderboard import job_values
from services.platform.outbox import DELIVER_WEBHOOK, add_message
from services.platform.phases import phases_due_for_release, withholds_events
from services.storage.models import (
    Job,
    Phase,
    Submission,
    Team,
    WebhookDelivery,
    WebhookDeliveryState,
    WebhookEndpoint,
)
from services.storage.types import utc_now
from services.vocab import TERMINAL_STATES, RunState, job_event_type


def _summary_of(session: Session, job_id: int) -> list[dict[str, Any]]:
    """The catalogue's event metrics per scenario and back-end, by the leaderboard's rule
    (aggregated over seeds; an attacker zoo's job gives the worst case over its attackers), so a
    receiver can act on the verdict without a second request."""
    values = job_values(session, job_id, [m.key for m in catalogue.event_metrics()])
    return [
        {"scenario": scenario, "backend": backend, **values[(scenario, backend)]}
        for scenario, backend in sorted(values)
    ]


def job_event_payload(session: Session, job: Job, event_type: str) -> dict[str, Any]:
    """The JSON body of a job event (``type``, ``timestamp``, ``data``)."""
    submission = session.get(Submission, job.submission_id)
    team = session.get(Team, job.team_id)
    data: dict[str, Any] = {
        "job_id": job.id,
        "state": job.state,
        "team": team.slug if team is not None else None,
        "submission_id": job.submission_id,
        "submission_name": submission.name if submission is not None else None,
        "protocol_id": job.protocol_id,
        "error_message": job.error_message,
        "created_at": job.created_at.isoformat() if job.created_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "links": {
            "job": f"/v1/jobs/{job.id}",
            "results": f"/v1/jobs/{job.id}/results",
            "page": f"/jobs/{job.id}",
        },
    }
    if job.state == RunState.SUCCEEDED.value:
        data["summary"] = _summary_of(session, job.id)
    return {"type": event_type, "timestamp": utc_now().isoformat(), "data": data}


def react_to_job_transition(session: Session, job: Job, new_state: RunState) -> None:
    """A job's state changed: a finished job's event is queued (the listener
    ``services.platform.jobs.reactions`` registers with ``records.on_job_transition``)."""
    if new_state in TERMINAL_STATES:
        record_job_event(session, job, now=job.finished_at)


def record_job_event(session: Session, job: Job, *, now: dt.datetime | None = None) -> list[int]:
    """Queue the event of a job that just reached a terminal state (same transaction).

    One delivery per active endpoint of the job's team subscribed to ``job.<state>``; their ids
    are queued in the outbox (sent after the transaction commits). Returns the new delivery ids.
    """
    if RunState(job.state) not in TERMINAL_STATES:
        return []
    if withholds_events(session, job, now):
        return []  # a hidden phase's job: recorded at its reveal (release_held_events)
    event_type = job_event_type(job.state)
    endpoints = [
        e
        for e in session.scalars(
            select(WebhookEndpoint).where(
                WebhookEndpoint.team_id == job.team_id, WebhookEndpoint.is_active.is_(True)
            )
        )
        if event_type in (e.event_types or [])
    ]
    if not endpoints:
        return []
    now = now or utc_now()
    payload = job_event_payload(session, job, event_type)
    deliveries = [
        WebhookDelivery(
            endpoint_id=endpoint.id,
            job_id=job.id,
            event_id=f"msg_{secrets.token_hex(16)}",
            event_type=event_type,
            payload=payload,
            state=WebhookDeliveryState.PENDING.value,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
        for endpoint in endpoints
    ]
    session.add_all(deliveries)
    session.flush()
    ids = [d.id for d in deliveries]
    for delivery_id in ids:
        add_message(session, topic=DELIVER_WEBHOOK, payload={"delivery_id": delivery_id})
    return ids


def release_held_events(session: Session, *, now: dt.datetime | None = None) -> dict[int, int]:
    """Record the events held back by hidden phases whose reveal time has come.

    For each such phase (locked; :func:`services.platform.phases.phases_due_for_release`), every
    terminal job in it gets its event now (:func:`record_job_event`), and the phase is marked
    released, in the caller's transaction. Returns ``{phase_id: deliveries recorded}``. Called
    from the periodic outbox relay, so a reveal goes out within one relay period.
    """
    now = now or utc_now()
    released: dict[int, int] = {}
    for phase in phases_due_for_release(session, now):
        released[phase.id] = release_phase_events(session, phase, now=now)
    session.flush()
    return released


def release_phase_events(session: Session, phase: Phase, *, now: dt.datetime | None = None) -> int:
    """Record the held-back event of every terminal job of ``phase`` (no longer hidden; the
    caller holds its row lock) and mark it released. Returns the deliveries recorded. A job whose
    event went out before (it finished while the phase was public) is not sent again."""
    now = now or utc_now()
    sent = select(WebhookDelivery.id).where(WebhookDelivery.job_id == Job.id).exists()
    jobs = session.scalars(
        select(Job)
        .where(
            Job.phase_id == phase.id,
            Job.state.in_([s.value for s in TERMINAL_STATES]),
            ~sent,
        )
        .order_by(Job.finished_at, Job.id)
    ).all()
    recorded = sum(len(record_job_event(session, job, now=now)) for job in jobs)
    phase.events_released_at = now
    return recorded


def release_due_events(bind: Engine, *, now: dt.datetime | None = None) -> dict[int, int]:
    """:func:`release_held_events` in a transaction of its own (the relay's and reaper's pass);
    the deliveries' outbox messages go out after its commit or with the next relay pass."""
    with Session(bind) as session, session.begin():
        return release_held_events(session, now=now)
