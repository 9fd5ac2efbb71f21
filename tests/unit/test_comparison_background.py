"""Paired intervals off the request path (services/platform/comparison/background.py): cached by
the unordered pair of trial sets' content hashes (in memory and in the blob store, shared by
processes), computed on a bounded pool, a full queue answered at once."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from services.platform.comparison import background
from services.platform.comparison.service import PairedResult, SideTrials, paired_result
from services.storage.blob_local import LocalBlobStore
from support.trials import trial_set_bytes


def _side(store: LocalBlobStore, name: str, separation: float) -> SideTrials:
    data = trial_set_bytes(separation)
    key = f"jobs/{name}/trials/baseline/semi-informed/cosine/seed0.npz"
    store.put_bytes(key, data)
    return (("baseline", ((0, key, hashlib.sha256(data).hexdigest()),)),)


def _result(found: PairedResult | Future[PairedResult]) -> PairedResult:
    return found.result(timeout=60) if isinstance(found, Future) else found


@pytest.fixture()
def store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs", signing_key="k")


def test_the_unordered_pair_is_computed_once_and_shared_through_the_blob_store(
    store: LocalBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _side(store, "1", 3.0), _side(store, "2", 2.0)
    calls: list[Any] = []
    real = background.paired_result

    def counting(*args: Any) -> PairedResult:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(background, "paired_result", counting)
    results = background.PairedResults(store)
    ab = _result(results.lookup_or_submit(a, b))
    assert ab.interval is not None and ab.interval[0] < ab.interval[1]
    ba = _result(results.lookup_or_submit(b, a))  # the other order: no new computation
    assert ba.interval == (-ab.interval[1], -ab.interval[0])
    assert ba.per_speaker is not None and ab.per_speaker is not None
    assert ba.per_speaker.a == ab.per_speaker.b
    assert len(calls) == 1
    # Equal to computing it directly, in either order.
    assert paired_result(store, a, b) == ab and paired_result(store, b, a) == ba
    # Another process (a new instance on the same store) reads it back without computing.
    other = background.PairedResults(store)
    assert _result(other.lookup_or_submit(b, a)) == ba and len(calls) == 1
    results.close()
    other.close()


def test_a_full_queue_is_answered_at_once_and_a_side_without_trials_needs_no_work(
    store: LocalBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()

    def blocked(*args: Any) -> PairedResult:
        release.wait(30)
        return PairedResult(None, None, "done")

    monkeypatch.setattr(background, "paired_result", blocked)
    results = background.PairedResults(store, workers=1, max_pending=2)
    sides = [_side(store, str(i), 1.0 + i) for i in range(4)]
    first = results.lookup_or_submit(sides[0], sides[1])
    again = results.lookup_or_submit(sides[1], sides[0])  # the same pair: queued once
    second = results.lookup_or_submit(sides[0], sides[2])
    busy = results.lookup_or_submit(sides[0], sides[3])
    assert isinstance(first, Future) and isinstance(again, Future)
    assert isinstance(second, Future)
    assert isinstance(busy, PairedResult) and busy.note == background.BUSY_NOTE
    missing = results.lookup_or_submit(None, sides[0])
    assert isinstance(missing, PairedResult) and "kept no per-trial scores" in str(missing.note)
    release.set()
    assert first.result(30).note == again.result(30).note == "done"
    results.close()


def test_the_api_builds_its_paired_results_on_the_settings_blob_store(tmp_path: Path) -> None:
    """Built on first use from the settings' store (both lazily, under one lock: no deadlock)."""
    from api.context import ApiContext
    from services.settings import Settings

    context = ApiContext(Settings(_env_file=None, blob_dir=tmp_path / "blobs"), senders={})  # type: ignore[call-arg]
    done = threading.Event()
    found: list[Any] = []

    def build() -> None:
        found.append(context.paired_results)
        done.set()

    threading.Thread(target=build, daemon=True).start()
    assert done.wait(10), "ApiContext.paired_results deadlocked"
    assert found[0].store is context.blob_store
    context.close()
