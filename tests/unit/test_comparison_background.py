"""Paired intervals off the request path (services/platform/comparison/background.py): cached by
the unordered pair of trial sets' content hashes (in memory and in the blob store, shared by
processes), computed in a child process of a bounded pool (services/cpu_pool.py) with the same
result as in this process, a full queue answered at once."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from services.cpu_pool import CpuPool
from services.platform.comparison import background, service
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


@pytest.fixture(scope="module")
def cpu() -> Iterator[CpuPool]:
    """One child process for the module's tests (it starts once: imports take a second)."""
    pool = CpuPool(1)
    yield pool
    pool.close()


def test_the_unordered_pair_is_computed_once_and_shared_through_the_blob_store(
    store: LocalBlobStore, cpu: CpuPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _side(store, "1", 3.0), _side(store, "2", 2.0)
    calls: list[Any] = []
    real = background.read_trial_bytes

    def counting(*args: Any) -> dict[str, bytes]:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(background, "read_trial_bytes", counting)
    results = background.PairedResults(store, cpu)
    ab = _result(results.lookup_or_submit(a, b))
    assert ab.interval is not None and ab.interval[0] < ab.interval[1]
    ba = _result(results.lookup_or_submit(b, a))  # the other order: no new computation
    assert ba.interval == (-ab.interval[1], -ab.interval[0])
    assert ba.per_speaker is not None and ab.per_speaker is not None
    assert ba.per_speaker.a == ab.per_speaker.b
    assert len(calls) == 1
    # Equal to computing it directly in this process, in either order.
    assert paired_result(store, a, b) == ab and paired_result(store, b, a) == ba
    # Another process (a new instance on the same store) reads it back without computing.
    other = background.PairedResults(store, cpu)
    assert _result(other.lookup_or_submit(b, a)) == ba and len(calls) == 1
    results.close()
    other.close()


def test_the_bootstrap_runs_in_a_child_process_with_the_same_result(
    store: LocalBlobStore, cpu: CpuPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool's child computes it (not this process: here the trial parser is broken), and
    its result is the one this process computes."""
    a, b = _side(store, "1", 2.5), _side(store, "2", 1.5)
    here = paired_result(store, a, b)
    assert here.interval is not None
    submitted: list[Any] = []
    real_submit = cpu.submit

    def spy(fn: Any, *args: Any, **kwargs: Any) -> Any:
        submitted.append(fn)
        return real_submit(fn, *args, **kwargs)

    def broken(data: bytes) -> Any:
        raise AssertionError("the bootstrap ran in the API process")

    monkeypatch.setattr(cpu, "submit", spy)
    monkeypatch.setattr(service, "load_scored_trials", broken)
    results = background.PairedResults(store, cpu)
    assert _result(results.lookup_or_submit(a, b)) == here
    assert submitted == [service.paired_from_bytes]
    child = real_submit(os.getpid).result(60)
    assert child != os.getpid() and cpu.child_pids() == [child]
    results.close()


def test_a_full_queue_is_answered_at_once_and_a_side_without_trials_needs_no_work(
    store: LocalBlobStore, cpu: CpuPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = background.read_trial_bytes

    def blocked(*args: Any) -> dict[str, bytes]:
        release.wait(30)
        return real(*args)

    monkeypatch.setattr(background, "read_trial_bytes", blocked)
    results = background.PairedResults(store, cpu, max_pending=2)
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
    assert first.result(60) == paired_result(store, sides[0], sides[1])
    assert again.result(60) == paired_result(store, sides[1], sides[0])
    assert first.result().interval is not None
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
    assert found[0].store is context.blob_store and found[0].cpu is context.cpu_pool
    assert context.cpu_pool.processes == context.settings.cpu_pool_processes
    context.close()
