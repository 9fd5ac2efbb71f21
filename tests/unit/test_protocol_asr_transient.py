"""A lost database connection while the protocol ASR task claims its training or records it
ready is retried (TransientProtocolAsrError), never a plain failure that leaves the protocol
``queued`` or ``running`` for good (a queued or running training is never queued again)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from services.errors import CorpusError
from services.platform import protocols as protocol_records
from services.platform.jobs import JobServices, protocol_asr
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from support.configs import micro_protocol_config

CONFIG = micro_protocol_config(utility={"asr": {"epochs": 1, "hidden_size": 16}})


def _services(database: Database, tmp_path: Path) -> JobServices:
    store = LocalBlobStore(tmp_path / "blobs", signing_key="k")
    return JobServices(database, store, Settings(data_dir=tmp_path / "data"), worker_host="w")


def _register(database: Database, name: str = "asr") -> int:
    with database.session_scope() as session:
        protocol = protocol_records.create_protocol(session, name, body={"config": CONFIG})
        assert protocol.asr_state == "queued"
        return protocol.id


def _state(database: Database, protocol_id: int) -> str | None:
    with database.session_scope() as session:
        return protocol_records.get_protocol_by_id(session, protocol_id).asr_state


def _lose_connection_on_scope(
    database: Database, monkeypatch: pytest.MonkeyPatch, lost: int
) -> None:
    """The ``lost``-th session scope (1-based) fails as a dropped connection does."""
    real = database.session_scope
    calls = [0]

    @contextmanager
    def flaky() -> Iterator[Session]:
        calls[0] += 1
        if calls[0] == lost:
            raise OperationalError("SELECT 1", {}, ConnectionError("server closed the connection"))
        with real() as session:
            yield session

    monkeypatch.setattr(database, "session_scope", flaky)


def test_a_lost_connection_while_recording_ready_is_retried(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol_id = _register(database)
    monkeypatch.setattr(protocol_asr, "_train", lambda *_: "utility-asr:abc")
    services = _services(database, tmp_path)
    _lose_connection_on_scope(database, monkeypatch, lost=2)  # 1: claim, 2: ready
    with pytest.raises(protocol_asr.TransientProtocolAsrError):
        protocol_asr.train_protocol_asr(services, protocol_id)
    monkeypatch.undo()
    monkeypatch.setattr(protocol_asr, "_train", lambda *_: "utility-asr:abc")
    assert protocol_asr.train_protocol_asr(services, protocol_id) == "ready"  # the retry
    assert _state(database, protocol_id) == "ready"


def test_a_lost_connection_while_claiming_is_retried(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol_id = _register(database)
    trained: list[Any] = []

    def train(*args: Any) -> str:
        trained.append(args)
        return "utility-asr:x"

    monkeypatch.setattr(protocol_asr, "_train", train)
    _lose_connection_on_scope(database, monkeypatch, lost=1)
    with pytest.raises(protocol_asr.TransientProtocolAsrError):
        protocol_asr.train_protocol_asr(_services(database, tmp_path), protocol_id)
    assert trained == []
    monkeypatch.undo()
    assert _state(database, protocol_id) == "queued"


@pytest.mark.parametrize(
    ("error", "outcome"),
    [(CorpusError("utterance x: unreadable"), "failed"), (RuntimeError("bug"), RuntimeError)],
)
def test_a_lost_connection_while_recording_failed_is_retried(
    database: Database,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    outcome: str | type[Exception],
) -> None:
    protocol_id = _register(database)

    def train(*_: Any) -> str:
        raise error

    monkeypatch.setattr(protocol_asr, "_train", train)
    services = _services(database, tmp_path)
    _lose_connection_on_scope(database, monkeypatch, lost=2)  # 1: claim, 2: failed
    with pytest.raises(protocol_asr.TransientProtocolAsrError):
        protocol_asr.train_protocol_asr(services, protocol_id)
    monkeypatch.undo()
    monkeypatch.setattr(protocol_asr, "_train", train)
    if isinstance(outcome, str):
        assert protocol_asr.train_protocol_asr(services, protocol_id) == outcome  # the retry
    else:
        with pytest.raises(outcome):
            protocol_asr.train_protocol_asr(services, protocol_id)
    assert _state(database, protocol_id) == "failed"


def _edit_protocol(database: Database, protocol_id: int, **values: Any) -> None:
    with database.session_scope() as session:
        protocol = protocol_records.get_protocol_by_id(session, protocol_id)
        for name, value in values.items():
            setattr(protocol, name, value)


def test_a_config_broken_after_registration_records_failed(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored config the current code refuses (an upgrade, a hand-edited row) is bad input:
    ``failed`` naming the problem, never a training left ``queued`` (never queued again)."""
    protocol_id = _register(database)
    broken = {**CONFIG, "utility": {"asr": {"epochs": -1, "hidden_size": 16}}}
    _edit_protocol(database, protocol_id, body={"config": broken})
    monkeypatch.setattr(protocol_asr, "_train", lambda *_: pytest.fail("trained"))
    assert protocol_asr.train_protocol_asr(_services(database, tmp_path), protocol_id) == "failed"
    with database.session_scope() as session:
        protocol = protocol_records.get_protocol_by_id(session, protocol_id)
        assert protocol.asr_state == "failed"
        assert "utility.asr.epochs" in (protocol.asr_error or "")


def test_a_training_past_its_hard_time_limit_is_recorded_failed(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Celery kills a task at its hard time limit and acknowledges its message: no code of the
    task records anything, so the reaper fails a training ``running`` for longer."""
    import datetime as dt

    from services.platform.jobs import stage_hard_time_limit_s
    from services.storage.types import utc_now

    services = _services(database, tmp_path)
    limit_s = stage_hard_time_limit_s(services.settings, "utility")
    now = utc_now()
    killed, alive = _register(database, "killed"), _register(database, "alive")
    _edit_protocol(
        database,
        killed,
        asr_state="running",
        asr_updated_at=now - dt.timedelta(seconds=limit_s + 1),
    )
    _edit_protocol(
        database,
        alive,
        asr_state="running",
        asr_updated_at=now - dt.timedelta(seconds=limit_s - 60),
    )
    assert protocol_asr.reap_protocol_asr(services, now=now) == [killed]
    assert _state(database, alive) == "running"
    from workers import tasks  # the reaper's task runs the pass

    monkeypatch.setattr(tasks, "get_services", lambda: services)
    assert tasks.reap()["protocol_asr_failed"] == []  # already recorded
    with database.session_scope() as session:
        protocol = protocol_records.get_protocol_by_id(session, killed)
        assert protocol.asr_state == "failed"
        assert "time limit" in (protocol.asr_error or "")
