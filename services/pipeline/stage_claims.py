"""Who computes a stage key: one claim per key, across every process that shares a blob store.

A stage (``stage_runner``) is named by the hash of its inputs, so two workers that need the same
stage at the same moment (the same job twice, a rerun, two jobs sharing a protocol's corpus) would
both compute it. A :class:`StageClaims` lets one of them compute and the others wait for the
published copy:

- :meth:`StageClaims.try_acquire` answers ``ACQUIRED`` (compute it now), ``PUBLISHED`` (someone
  finished it: download it) or ``HELD`` (someone is computing it: wait and ask again).
- A claim is a lease: its holder renews it every ``heartbeat_s`` seconds from a thread
  (:func:`held_claim`) while the stage computes; a claim not renewed for ``lease_s`` seconds
  (its worker died or lost the database) is taken over by the next worker that asks.
- :meth:`StageClaims.mark_published` records that the folder is in the blob store, and
  :meth:`StageClaims.release` gives up a claim whose computation failed.

Claims are an economy (compute once), not the safety net: publishing is race-safe on its own
(``workspace``: unique upload prefixes, conditional index write), so a holder that lost its lease
and a taker-over that both compute publish one consistent folder.

Two implementations, chosen where the workspace is composed: :class:`HostClaims` (no database:
``unmask evaluate``; the per-host ``flock`` the runner already holds is the claim) and the
database table ``stage_claims`` (``services.platform.jobs.stage_claims.DatabaseStageClaims``,
PostgreSQL across hosts, SQLite on one host). This module imports no database code.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from enum import StrEnum

log = logging.getLogger(__name__)

# First wait between two looks at a stage another worker computes (s); doubles up to the maximum.
FIRST_POLL_S = 0.2


class ClaimStatus(StrEnum):
    """The answer of :meth:`StageClaims.try_acquire`."""

    ACQUIRED = "acquired"  # this caller computes the stage now
    PUBLISHED = "published"  # a finished copy is in the blob store
    HELD = "held"  # another worker computes it under a live lease


def claim_owner() -> str:
    """A name for this process's claims: host, pid and a random tag (unique across restarts)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class StageClaims(ABC):
    """The claim of each stage key (see the module docstring). Times in seconds."""

    def __init__(self, *, lease_s: float, heartbeat_s: float, poll_max_s: float) -> None:
        if not 0 < heartbeat_s < lease_s:
            raise ValueError(f"claim heartbeat {heartbeat_s} s must be under the lease {lease_s} s")
        self.lease_s = lease_s
        self.heartbeat_s = heartbeat_s
        self.poll_max_s = poll_max_s
        self.owner = claim_owner()

    @abstractmethod
    def try_acquire(self, stage: str, key: str, *, retake_published: bool = False) -> ClaimStatus:
        """Claim ``stage``/``key`` for this process unless it is published or held elsewhere.

        ``retake_published``: the published copy is missing or failed verification, so claim
        the key to compute it again even though it is recorded as published.
        """

    @abstractmethod
    def renew(self, stage: str, key: str) -> bool:
        """Extend this process's lease; False when the claim is no longer ours (taken over)."""

    @abstractmethod
    def mark_published(self, stage: str, key: str) -> None:
        """Record that the stage's folder is published (whoever won the publishing race)."""

    @abstractmethod
    def release(self, stage: str, key: str) -> None:
        """Give up this process's claim (its computation failed): the next asker takes it."""


class HostClaims(StageClaims):
    """Claims without a database: every ask is granted.

    The caller holds the stage key's ``flock`` (``stage_runner.stage_lock``), which is the claim
    among the processes of one host; processes on other hosts are not coordinated (publishing
    stays race-safe without it).
    """

    def __init__(self) -> None:
        super().__init__(lease_s=2.0, heartbeat_s=1.0, poll_max_s=1.0)

    def try_acquire(self, stage: str, key: str, *, retake_published: bool = False) -> ClaimStatus:
        return ClaimStatus.ACQUIRED

    def renew(self, stage: str, key: str) -> bool:
        return True

    def mark_published(self, stage: str, key: str) -> None:
        return None

    def release(self, stage: str, key: str) -> None:
        return None

    @property
    def needs_heartbeat(self) -> bool:
        """Nothing to renew (no lease anyone else reads)."""
        return False


class _Heartbeat(threading.Thread):
    """Renews one claim every ``claims.heartbeat_s`` seconds until stopped."""

    def __init__(self, claims: StageClaims, stage: str, key: str) -> None:
        super().__init__(name=f"claim-heartbeat-{stage}-{key}", daemon=True)
        self.claims = claims
        self.stage = stage
        self.key = key
        self.stopped = threading.Event()
        self.lost = False

    def run(self) -> None:
        while not self.stopped.wait(self.claims.heartbeat_s):
            try:
                if not self.claims.renew(self.stage, self.key):
                    # Another worker took the key over: both compute, one publishes (safe).
                    self.lost = True
                    log.warning("claim on stage %s/%s taken over", self.stage, self.key)
                    return
            except Exception as exc:  # the database is away: keep trying, the lease may hold
                log.warning("could not renew the claim on %s/%s: %r", self.stage, self.key, exc)


@contextlib.contextmanager
def held_claim(claims: StageClaims, stage: str, key: str) -> Iterator[None]:
    """Renew an acquired claim from a thread while the body runs; release it if the body fails.

    On success the caller has marked the stage published (which ends the claim), so nothing is
    released then.
    """
    beat: _Heartbeat | None = None
    if getattr(claims, "needs_heartbeat", True):
        beat = _Heartbeat(claims, stage, key)
        beat.start()
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):  # the failure that got us here matters more
            claims.release(stage, key)
        raise
    finally:
        if beat is not None:
            beat.stopped.set()
            beat.join()
