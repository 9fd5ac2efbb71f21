"""Real PostgreSQL: a connection opened with the keepalive parameters
(``UNMASK_DATABASE_TCP_KEEPALIVE_S``) works, and its socket carries them. (``SHOW
tcp_keepalives_idle`` cannot tell: it is the server's side of the connection, not ours.)"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from sqlalchemy import text

from services.storage.db import Database

pytestmark = pytest.mark.integration


def _socket_options(database: Database) -> dict[str, int]:
    """SO_KEEPALIVE and the TCP timers of one pooled connection's socket."""
    with database.engine.connect() as conn:
        assert conn.execute(text("SELECT 1")).scalar() == 1
        driver: Any = conn.connection.dbapi_connection
        sock = socket.socket(fileno=driver.pgconn.socket)
        try:
            return {
                "keepalive": sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                "idle": sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                "interval": sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                "count": sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
                "user_timeout_ms": sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
            }
        finally:
            sock.detach()  # the descriptor stays libpq's


@pytest.mark.skipif(not hasattr(socket, "TCP_USER_TIMEOUT"), reason="Linux socket options")
def test_a_postgres_connection_opens_with_the_keepalive_parameters(
    pg_database: Database,
) -> None:
    tuned = Database(pg_database.url, tcp_keepalive_s=17, statement_timeout_s=5)
    try:
        options = _socket_options(tuned)
    finally:
        tuned.dispose()
    assert options == {
        "keepalive": 1,
        "idle": 17,
        "interval": 10,
        "count": 3,
        "user_timeout_ms": 47_000,
    }
    # The default connection (30 s) too, next to libpq's own defaults when switched off.
    assert _socket_options(pg_database)["idle"] == 30
    system = Database(pg_database.url, tcp_keepalive_s=0)
    try:
        assert _socket_options(system)["user_timeout_ms"] == 0
    finally:
        system.dispose()
