"""Stage claims in the database (table ``stage_claims``) on SQLite and PostgreSQL, and the blob
store's conditional write and transient errors that publishing relies on."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from sqlalchemy import select, update

from services.pipeline.stage_claims import ClaimStatus, held_claim
from services.pipeline.stage_runner import stage_key
from services.pipeline.workspace import StageWorkspace, SyncedStageRunner
from services.platform.jobs.host import is_transient_error, storage_transient_errors
from services.platform.jobs.stage_claims import DatabaseStageClaims
from services.storage.blob_interface import BlobStore, BlobStoreUnavailableError
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from services.storage.models import StageClaim
from services.storage.types import utc_now

pytestmark = pytest.mark.integration


def _claims(database: Database, lease_s: float = 30.0) -> DatabaseStageClaims:
    return DatabaseStageClaims(
        database, lease_s=lease_s, heartbeat_s=min(1.0, lease_s / 3), poll_max_s=0.05
    )


def _row(database: Database, stage: str, key: str) -> StageClaim:
    with database.session_scope() as session:
        row = session.scalars(
            select(StageClaim).where(StageClaim.stage == stage, StageClaim.key == key)
        ).one()
        session.expunge(row)
        return row


def test_one_claimant_wins_the_others_wait_until_published(any_database: Database) -> None:
    first, second = _claims(any_database), _claims(any_database)
    assert first.try_acquire("train", "k1") == ClaimStatus.ACQUIRED
    assert second.try_acquire("train", "k1") == ClaimStatus.HELD
    assert first.try_acquire("train", "k1") == ClaimStatus.ACQUIRED  # ours already
    assert second.renew("train", "k1") is False  # not its claim
    assert first.renew("train", "k1") is True
    first.mark_published("train", "k1")
    assert second.try_acquire("train", "k1") == ClaimStatus.PUBLISHED
    row = _row(any_database, "train", "k1")
    assert (row.state, row.owner, row.lease_expires_at) == ("published", first.owner, None)
    # A published copy found missing may be recomputed: the asker takes the key again.
    assert second.try_acquire("train", "k1", retake_published=True) == ClaimStatus.ACQUIRED
    assert first.try_acquire("train", "k1", retake_published=True) == ClaimStatus.HELD
    assert _row(any_database, "train", "k1").computations == 3  # first, first again, second


def test_an_expired_lease_is_taken_over_and_the_old_holder_learns_it(
    any_database: Database,
) -> None:
    dead, alive = _claims(any_database), _claims(any_database)
    assert dead.try_acquire("embed", "k2") == ClaimStatus.ACQUIRED
    with any_database.session_scope() as session:  # its worker stopped renewing long ago
        session.execute(
            update(StageClaim)
            .where(StageClaim.key == "k2")
            .values(lease_expires_at=utc_now() - dt.timedelta(seconds=1))
        )
    assert alive.try_acquire("embed", "k2") == ClaimStatus.ACQUIRED
    assert dead.renew("embed", "k2") is False
    dead.release("embed", "k2")  # not its claim any more: changes nothing
    row = _row(any_database, "embed", "k2")
    assert (row.owner, row.state, row.computations) == (alive.owner, "computing", 2)


def test_a_released_claim_goes_to_the_next_asker(any_database: Database) -> None:
    failed, next_one = _claims(any_database), _claims(any_database)
    assert failed.try_acquire("score", "k3") == ClaimStatus.ACQUIRED
    with pytest.raises(RuntimeError), held_claim(failed, "score", "k3"):
        raise RuntimeError("the stage failed")
    assert _row(any_database, "score", "k3").state == "released"
    assert next_one.try_acquire("score", "k3") == ClaimStatus.ACQUIRED


def test_the_heartbeat_thread_keeps_a_short_lease_alive(any_database: Database) -> None:
    holder, other = _claims(any_database, lease_s=1.5), _claims(any_database, lease_s=1.5)
    assert holder.try_acquire("train", "k4") == ClaimStatus.ACQUIRED
    with held_claim(holder, "train", "k4"):
        time.sleep(2.5)  # longer than the lease: only the renewals keep it
        assert other.try_acquire("train", "k4") == ClaimStatus.HELD
    time.sleep(1.7)  # no heartbeat after the block: the lease runs out
    assert other.try_acquire("train", "k4") == ClaimStatus.ACQUIRED


def test_concurrent_claimants_of_one_key_get_exactly_one_claim(pg_database: Database) -> None:
    claimants = [_claims(pg_database) for _ in range(6)]
    barrier = threading.Barrier(len(claimants))
    answers: list[ClaimStatus] = []

    def ask(claims: DatabaseStageClaims) -> None:
        barrier.wait()
        answers.append(claims.try_acquire("corpus", "k5"))

    threads = [threading.Thread(target=ask, args=(c,)) for c in claimants]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == sorted([ClaimStatus.ACQUIRED] + [ClaimStatus.HELD] * 5)


def test_synced_runners_with_claims_compute_a_stage_once(
    sqlite_migrated_database: Database, tmp_path: Path, blob_store: BlobStore
) -> None:
    """Two hosts (threads, separate folders) on one SQLite claims table: one computes, the other
    waits for the published copy and downloads it."""
    calls: list[str] = []
    started = threading.Event()

    def compute(name: str):  # type: ignore[no-untyped-def]
        def fn(folder: Path) -> dict[str, str]:
            calls.append(name)
            started.set()
            time.sleep(0.5)  # the other host asks meanwhile
            (folder / "x.txt").write_text(name)
            return {"by": name}

        return fn

    runners = {
        name: SyncedStageRunner(
            tmp_path / name,
            StageWorkspace(blob_store, tmp_path / name),
            claims=_claims(sqlite_migrated_database),
        )
        for name in ("a", "b")
    }
    outcomes = {}

    def run(name: str) -> None:
        if name == "b":
            started.wait(10)
        outcomes[name] = runners[name].run("s", {"v": 1}, compute(name))

    threads = [threading.Thread(target=run, args=(n,)) for n in runners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == ["a"]
    assert outcomes["b"].reused and outcomes["b"].outputs == {"by": "a"}
    assert [t.direction for t in runners["b"].transfers] == ["download"]
    row = _row(sqlite_migrated_database, "s", stage_key("s", {"v": 1}))
    assert (row.state, row.computations) == ("published", 1)


def test_conditional_put_lets_exactly_one_writer_win(blob_store: BlobStore) -> None:
    assert blob_store.put_bytes_if_absent("stages/s/k/INDEX.json", b"first") is True
    assert blob_store.put_bytes_if_absent("stages/s/k/INDEX.json", b"second") is False
    assert blob_store.get_bytes("stages/s/k/INDEX.json") == b"first"  # verified read


def test_conditional_put_under_contention(blob_store: BlobStore) -> None:
    barrier = threading.Barrier(8)
    wins: list[bool] = []

    def put(i: int) -> None:
        barrier.wait()
        wins.append(blob_store.put_bytes_if_absent("race/INDEX.json", f"{i}".encode()))

    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(wins) == [False] * 7 + [True]


def _client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "GetObject",
    )


@pytest.mark.parametrize(
    ("code", "status"), [("InternalError", 500), ("SlowDown", 503), ("ServiceUnavailable", 503)]
)
def test_blob_server_errors_and_throttling_are_transient(
    s3_store: S3BlobStore, monkeypatch: pytest.MonkeyPatch, code: str, status: int
) -> None:
    s3_store.put_bytes("a/b", b"x")

    def failing(**_: object) -> None:
        raise _client_error(code, status)

    monkeypatch.setattr(s3_store.client, "get_object", failing)
    monkeypatch.setattr(s3_store.client, "head_object", failing)
    with pytest.raises(BlobStoreUnavailableError) as caught:
        s3_store.get_bytes("a/b")
    assert is_transient_error(caught.value, storage_transient_errors())


def test_blob_client_errors_stay_errors(
    s3_store: S3BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(**_: object) -> None:
        raise _client_error("AccessDenied", 403)

    monkeypatch.setattr(s3_store.client, "head_object", denied)
    with pytest.raises(ClientError):
        s3_store.stat("a/b")
