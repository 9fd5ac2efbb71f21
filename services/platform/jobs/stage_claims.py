"""Stage claims in the database every worker shares (table ``stage_claims``).

The interface and its protocol are in ``services/pipeline/stage_claims.py``. Each call is one
short transaction of single conditional statements, so it is race-free on PostgreSQL (an
``UPDATE`` re-checks its ``WHERE`` on the row it locked) and on SQLite (one writer at a time):

- acquire: ``INSERT`` the key's row (the unique constraint lets one inserter win), else
  ``UPDATE ... WHERE`` the row is not published (unless retaken) and its lease expired, was
  released, or is already ours. Whoever's statement changed the row holds the claim.
- renew: ``UPDATE`` the lease ``WHERE owner = me AND state = 'computing'``.
- publish / release: ``UPDATE`` the state.

Lease times come from each worker's clock (UTC); hosts must keep their clocks in step (NTP) to
well within the lease (``UNMASK_STAGE_CLAIM_LEASE_S``, 120 s by default).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import and_, false, insert, or_, select, true, update
from sqlalchemy.exc import IntegrityError

from services.pipeline.stage_claims import ClaimStatus, StageClaims
from services.settings import Settings
from services.storage.db import Database
from services.storage.models import StageClaim, StageClaimState
from services.storage.types import utc_now

_COMPUTING = StageClaimState.COMPUTING.value
_PUBLISHED = StageClaimState.PUBLISHED.value
_RELEASED = StageClaimState.RELEASED.value


class DatabaseStageClaims(StageClaims):
    """Claims as rows of ``stage_claims`` (PostgreSQL across hosts, SQLite on one host)."""

    def __init__(
        self, database: Database, *, lease_s: float, heartbeat_s: float, poll_max_s: float
    ) -> None:
        super().__init__(lease_s=lease_s, heartbeat_s=heartbeat_s, poll_max_s=poll_max_s)
        self.database = database

    @classmethod
    def from_settings(cls, database: Database, settings: Settings) -> DatabaseStageClaims:
        """Claims with the lease, heartbeat and poll times of ``UNMASK_STAGE_CLAIM_*``."""
        return cls(
            database,
            lease_s=settings.stage_claim_lease_s,
            heartbeat_s=settings.stage_claim_heartbeat_s,
            poll_max_s=settings.stage_claim_poll_max_s,
        )

    def _lease_end(self, now: dt.datetime) -> dt.datetime:
        return now + dt.timedelta(seconds=self.lease_s)

    def try_acquire(self, stage: str, key: str, *, retake_published: bool = False) -> ClaimStatus:
        now = utc_now()
        with self.database.session_scope() as session:
            try:
                with session.begin_nested():
                    session.execute(
                        insert(StageClaim).values(
                            stage=stage,
                            key=key,
                            state=_COMPUTING,
                            owner=self.owner,
                            lease_expires_at=self._lease_end(now),
                            heartbeat_at=now,
                            computations=1,
                            created_at=now,
                        )
                    )
                return ClaimStatus.ACQUIRED
            except IntegrityError:
                pass  # the row exists: take it over below if it is free
            free = and_(
                StageClaim.state.in_([_COMPUTING, _RELEASED]),
                or_(
                    StageClaim.state == _RELEASED,
                    StageClaim.owner == self.owner,
                    StageClaim.lease_expires_at.is_(None),
                    StageClaim.lease_expires_at < now,
                ),
            )
            # A published copy found missing or wrong may be recomputed (never a live claim).
            retake = and_(StageClaim.state == _PUBLISHED, true() if retake_published else false())
            result = session.execute(
                update(StageClaim)
                .where(StageClaim.stage == stage, StageClaim.key == key, or_(free, retake))
                .values(
                    state=_COMPUTING,
                    owner=self.owner,
                    lease_expires_at=self._lease_end(now),
                    heartbeat_at=now,
                    computations=StageClaim.computations + 1,
                    published_at=None,
                )
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 1:  # type: ignore[attr-defined]
                return ClaimStatus.ACQUIRED
            state = session.execute(
                select(StageClaim.state).where(StageClaim.stage == stage, StageClaim.key == key)
            ).scalar_one()
            return ClaimStatus.PUBLISHED if state == _PUBLISHED else ClaimStatus.HELD

    def renew(self, stage: str, key: str) -> bool:
        now = utc_now()
        with self.database.session_scope() as session:
            result = session.execute(
                update(StageClaim)
                .where(
                    StageClaim.stage == stage,
                    StageClaim.key == key,
                    StageClaim.owner == self.owner,
                    StageClaim.state == _COMPUTING,
                )
                .values(lease_expires_at=self._lease_end(now), heartbeat_at=now)
                .execution_options(synchronize_session=False)
            )
            return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    def mark_published(self, stage: str, key: str) -> None:
        # Whoever's index won, the folder is published: no owner condition.
        with self.database.session_scope() as session:
            session.execute(
                update(StageClaim)
                .where(StageClaim.stage == stage, StageClaim.key == key)
                .values(state=_PUBLISHED, lease_expires_at=None, published_at=utc_now())
                .execution_options(synchronize_session=False)
            )

    def release(self, stage: str, key: str) -> None:
        with self.database.session_scope() as session:
            session.execute(
                update(StageClaim)
                .where(
                    StageClaim.stage == stage,
                    StageClaim.key == key,
                    StageClaim.owner == self.owner,
                    StageClaim.state == _COMPUTING,
                )
                .values(state=_RELEASED, lease_expires_at=None)
                .execution_options(synchronize_session=False)
            )
