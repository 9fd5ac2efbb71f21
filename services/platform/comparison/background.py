"""Paired intervals off the request path: computed by a bounded pool of background threads and
cached by the unordered pair of trial sets (their artifacts' content hashes).

A paired speaker bootstrap takes about a second of CPU per (scenario, back-end) for a real
protocol. A server never computes one while it holds a database session or a request thread:
it reads the comparison's rows (``compare_submissions`` without a store fills ``trial_refs``),
closes its session, then asks :meth:`PairedResults.lookup_or_submit` for each pair: a cached
result (this process's memory, else the blob store's ``cache/compare-paired/<hash>.json``,
shared by every API process and surviving restarts) or a future of the computation, queued on
at most ``workers`` threads (a pair already queued is not queued twice; beyond ``max_pending``
queued pairs nothing more is queued and the caller says so). Kept trials never change under
their hashes, so a cached result never goes stale.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from services.platform.comparison.service import (
    PairedResult,
    PerSpeakerPairs,
    SideTrials,
    missing_trials,
    paired_result,
    unordered,
)
from services.storage.blob_interface import BlobStore
from services.storage.errors import BlobNotFoundError

logger = logging.getLogger(__name__)

CACHE_PREFIX = "cache/compare-paired"
BUSY_NOTE = "no paired interval yet: the server is computing many; ask again in a minute"
PENDING_NOTE = "no paired interval yet: it is being computed; ask again in a few seconds"
MEMORY_ENTRIES = 512


def pair_digest(side_a: SideTrials, side_b: SideTrials) -> str:
    """sha256 of the unordered pair (attackers, seeds and artifact content hashes; blob keys
    left out: the same bytes under another job's key are the same trials)."""
    first, second, _ = unordered(side_a, side_b)
    canonical = [
        [[attacker, [[seed, sha] for seed, _key, sha in seeds]] for attacker, seeds in side]
        for side in (first, second)
    ]
    return hashlib.sha256(json.dumps(canonical, separators=(",", ":")).encode()).hexdigest()


def _to_json(result: PairedResult) -> bytes:
    pairs = result.per_speaker
    return json.dumps(
        {
            "interval": list(result.interval) if result.interval is not None else None,
            "per_speaker": vars(pairs) if pairs is not None else None,
            "note": result.note,
        }
    ).encode()


def _from_json(data: bytes) -> PairedResult:
    raw: dict[str, Any] = json.loads(data)
    interval = raw.get("interval")
    pairs = raw.get("per_speaker")
    return PairedResult(
        (float(interval[0]), float(interval[1])) if interval else None,
        PerSpeakerPairs(**pairs) if pairs else None,
        raw.get("note"),
    )


class PairedResults:
    """Paired results of one blob store: cached, computed on ``workers`` background threads."""

    def __init__(self, store: BlobStore, *, workers: int = 1, max_pending: int = 64) -> None:
        self.store = store
        self.max_pending = max_pending
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="paired")
        self._lock = threading.Lock()
        self._memory: OrderedDict[str, PairedResult] = OrderedDict()  # canonical order
        self._pending: dict[str, Future[PairedResult]] = {}

    def _remember(self, digest: str, result: PairedResult) -> None:
        with self._lock:
            self._memory[digest] = result
            self._memory.move_to_end(digest)
            while len(self._memory) > MEMORY_ENTRIES:
                self._memory.popitem(last=False)

    def _cached(self, digest: str) -> PairedResult | None:
        with self._lock:
            found = self._memory.get(digest)
        if found is not None:
            return found
        try:
            found = _from_json(self.store.get_bytes(f"{CACHE_PREFIX}/{digest}.json"))
        except BlobNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:  # a damaged entry: computed again
            logger.warning("ignoring the cached paired result %s: %r", digest, exc)
            return None
        self._remember(digest, found)
        return found

    def _compute(self, digest: str, first: SideTrials, second: SideTrials) -> PairedResult:
        try:
            result = paired_result(self.store, first, second)
            self._remember(digest, result)
            try:
                self.store.put_bytes(
                    f"{CACHE_PREFIX}/{digest}.json", _to_json(result), media_type="application/json"
                )
            except OSError as exc:  # the memory copy still serves this process
                logger.warning("could not store the paired result %s: %r", digest, exc)
            return result
        finally:
            with self._lock:
                self._pending.pop(digest, None)

    def lookup_or_submit(
        self, side_a: SideTrials | None, side_b: SideTrials | None
    ) -> PairedResult | Future[PairedResult]:
        """The result for (a, b) if known (or needing no computation), else a future of it (in
        a, b order); a result with :data:`BUSY_NOTE` when too many are queued already. Reads
        the blob store: call it from a thread, not an event loop."""
        missing = missing_trials(side_a, side_b)
        if missing is not None:
            return missing
        assert side_a is not None and side_b is not None
        first, second, swapped = unordered(side_a, side_b)
        digest = pair_digest(first, second)
        cached = self._cached(digest)
        if cached is not None:
            return cached.swapped() if swapped else cached
        with self._lock:
            future = self._pending.get(digest)
            if future is None:
                if len(self._pending) >= self.max_pending:
                    return PairedResult(None, None, BUSY_NOTE)
                future = self._pool.submit(self._compute, digest, first, second)
                self._pending[digest] = future
        if not swapped:
            return future
        flipped: Future[PairedResult] = Future()

        def flip(done: Future[PairedResult]) -> None:
            if done.cancelled():  # the server is stopping
                flipped.cancel()
                return
            error = done.exception()
            if error is not None:
                flipped.set_exception(error)
            else:
                flipped.set_result(done.result().swapped())

        future.add_done_callback(flip)
        return flipped

    def close(self) -> None:
        """Stop the threads (queued computations are dropped)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
