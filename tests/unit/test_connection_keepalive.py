"""A connection whose network is cut fails in about a minute instead of hanging for hours: server
database connections carry libpq's keepalive parameters (``UNMASK_DATABASE_TCP_KEEPALIVE_S``),
and the Redis broker, Redis results and the S3 client turn TCP keepalive on."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from services.settings import Settings
from services.storage.db import Database

SERVER_URL = "postgresql+psycopg://postgres@127.0.0.1:1/never"


class _Stop(Exception):
    """Raised by the connect hook: the parameters were seen, no connection is needed."""


def _connect_params(database: Database) -> dict[str, Any]:
    """The keyword arguments the engine hands the driver's ``connect`` (caught before it runs)."""
    seen: dict[str, Any] = {}

    @event.listens_for(database.engine, "do_connect")
    def _catch(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
        seen.update(cparams)
        raise _Stop

    with pytest.raises(_Stop):
        database.engine.connect()
    database.dispose()
    return seen


def _settings(**overrides: Any) -> Settings:
    return Settings(_env_file=None, token_hmac_key="x" * 32, **overrides)  # type: ignore[call-arg]


def test_server_database_connections_carry_the_keepalive_parameters() -> None:
    params = _connect_params(Database.from_settings(_settings(database_url=SERVER_URL)))
    assert params["keepalives"] == 1
    assert params["keepalives_idle"] == 30  # the default setting
    assert params["keepalives_interval"] == 10 and params["keepalives_count"] == 3
    # An unacknowledged write gets as long as an unanswered probe series: 30 + 3 * 10 s.
    assert params["tcp_user_timeout"] == 60_000
    assert params["connect_timeout"] == 10  # beside the existing options, not instead


def test_the_keepalive_setting_is_read_and_zero_leaves_the_system_defaults() -> None:
    tuned = _settings(database_url=SERVER_URL, database_tcp_keepalive_s=5)
    params = _connect_params(Database.from_settings(tuned))
    assert params["keepalives_idle"] == 5 and params["tcp_user_timeout"] == 35_000
    off = _connect_params(
        Database.from_settings(_settings(database_url=SERVER_URL, database_tcp_keepalive_s=0))
    )
    assert not {"keepalives", "keepalives_idle", "tcp_user_timeout"} & set(off)


def test_keepalive_parameters_in_the_url_win() -> None:
    params = _connect_params(Database(f"{SERVER_URL}?keepalives_idle=7&tcp_user_timeout=9000"))
    assert params["keepalives_idle"] == "7" and params["tcp_user_timeout"] == "9000"
    assert params["keepalives_interval"] == 10  # the ones the URL does not name still apply


def test_sqlite_connections_get_no_keepalive_parameters(tmp_path: Any) -> None:
    database = Database(f"sqlite:///{tmp_path / 'unmask.db'}")
    assert "keepalives" not in _connect_params(database)


def test_the_redis_broker_and_results_turn_keepalive_on() -> None:
    from workers.app import celery_config

    conf = celery_config(
        _settings(broker_url="redis://127.0.0.1:1/0", result_backend="redis://127.0.0.1:1/1")
    )
    assert conf["broker_transport_options"]["socket_keepalive"] is True
    assert conf["broker_transport_options"]["visibility_timeout"] > 3600  # still there
    assert conf["redis_socket_keepalive"] is True


def test_the_s3_client_turns_keepalive_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.storage.blob_s3 import S3BlobStore

    monkeypatch.setattr(S3BlobStore, "ensure_bucket", lambda self: None)  # no service here
    store = S3BlobStore.from_settings(
        _settings(blob_backend="s3", s3_endpoint_url="http://127.0.0.1:1")
    )
    assert store.client.meta.config.tcp_keepalive is True
