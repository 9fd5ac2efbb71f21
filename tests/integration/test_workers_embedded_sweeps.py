"""Embedded mode (SQLite, filesystem broker) has no beat: its worker relays the outbox itself.

An outbox message whose after-commit send failed (here: the writing process had a sender that
raised, as when "database is locked" or the broker failed it) is sent later by the relay thread
of a plain embedded worker (``celery -A workers.app worker``, no beat process anywhere), and the
worker runs the task it names.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from cli.demo_platform import embedded_environment, free_port
from services.platform.outbox import DELIVER_WEBHOOK, add_message, install_senders
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from services.storage.models import OutboxMessage
from support.workers import spawn_celery, stop_process, wait_until_ready

pytestmark = pytest.mark.integration

DELIVERY_ID = 987_654  # no such delivery: the task finds nothing to do, which is enough here


def _refuse(_payload: Any) -> None:
    raise ConnectionError("the after-commit send failed (test)")


def test_a_message_the_after_commit_send_missed_is_relayed_by_the_embedded_worker(
    tmp_path: Path,
) -> None:
    state = tmp_path / "platform"
    env = embedded_environment(state, api_port=free_port())
    env.update(
        {
            "UNMASK_OUTBOX_RESEND_AFTER_S": "1",
            "UNMASK_REAPER_INTERVAL_S": "5",
            "UNMASK_NUM_THREADS": "1",
            "UNMASK_CHALLENGER": "false",
        }
    )
    url = env["UNMASK_DATABASE_URL"]
    upgrade_database(url)
    database = Database(url)
    install_senders({DELIVER_WEBHOOK: _refuse}, retry_after_s=1.0)
    try:
        with database.session_scope() as session:
            message_id = add_message(
                session, topic=DELIVER_WEBHOOK, payload={"delivery_id": DELIVERY_ID}
            ).id
        with database.session_scope() as session:
            message = session.get(OutboxMessage, message_id)
            assert message is not None and message.sent_at is None
            assert "after-commit send failed" in (message.last_error or "")
    finally:
        install_senders(None)
    log = tmp_path / "worker.log"
    worker = spawn_celery(
        ["worker", "-Q", "gpu,cpu", "--pool", "solo", "-n", "embedded@%h", "--loglevel", "INFO"],
        env,
        log,
    )
    try:
        wait_until_ready(worker, log, timeout_s=50)
        # An upper bound, reached only on failure: the relay passes every 0.5 s, yet on a busy
        # 2-core machine (load average 7) the test once failed with a 20 s bound.
        deadline = time.monotonic() + 90
        sent_at = None
        while time.monotonic() < deadline and sent_at is None:
            with database.session_scope() as session:
                sent_at = session.scalar(
                    select(OutboxMessage.sent_at).where(OutboxMessage.id == message_id)
                )
            time.sleep(0.3)
        assert sent_at is not None, log.read_text(errors="replace")[-3000:]
        while time.monotonic() < deadline and "deliver_webhook" not in log.read_text():
            time.sleep(0.3)
        assert "unmask.deliver_webhook" in log.read_text(errors="replace")
    finally:
        stop_process(worker)
        database.dispose()
