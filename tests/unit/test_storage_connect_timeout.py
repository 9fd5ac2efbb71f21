"""A server database that accepts connections but never answers fails in seconds (the connect
timeout, ``UNMASK_DATABASE_CONNECT_TIMEOUT_S``), not after minutes."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from services.settings import Settings
from services.storage.db import Database


def test_a_silent_database_fails_within_the_connect_timeout() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # accept, then say nothing
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"postgresql+psycopg://postgres@127.0.0.1:{port}/silent",
        token_hmac_key="x" * 32,
        database_connect_timeout_s=2,
    )
    database = Database.from_settings(settings)
    started = time.monotonic()
    try:
        with pytest.raises(OperationalError), database.session_scope() as session:
            session.execute(text("SELECT 1"))
        assert time.monotonic() - started < 15  # libpq may try IPv4 and IPv6 once each
        assert accepted  # it did connect: the server just never answered
    finally:
        stop.set()
        thread.join(5)
        database.dispose()
        for conn in accepted:
            conn.close()
        listener.close()
