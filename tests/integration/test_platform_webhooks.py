"""Outgoing webhooks: registration API, Standard Webhooks signatures, delivery with retries by a
real Celery worker (Redis broker on loopback) to a real HTTP receiver on loopback."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update as sa_update

from services.platform import identity
from services.platform import results as result_records
from services.platform import submissions as submission_records
from services.platform import webhooks as store
from services.platform.jobs import JobServices
from services.platform.outbox import DELIVER_WEBHOOK, install_senders
from services.platform.webhooks import (
    WebhookVerificationError,
    attempt_delivery,
    canonical_body,
    sign,
    verify,
)
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.models import OutboxMessage, WebhookDelivery, WebhookEndpoint
from support.seeding import record_finished_job

pytestmark = pytest.mark.integration

REDIS_URL = "redis://127.0.0.1:6379/13"


class Receiver:
    """A loopback HTTP server that records every POST and answers from a script of statuses."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = list(statuses)
        self.received: list[tuple[dict[str, str], bytes, float]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((dict(self.headers.items()), body, time.monotonic()))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"nope" if status >= 400 else b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/unmask"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def no_sender() -> Iterator[None]:
    """No outbox sender in this process: deliveries stay pending for the test to drive."""
    install_senders(None)
    yield
    install_senders(None)


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    server = Receiver([500])  # the first attempt fails, the retry succeeds
    yield server
    server.close()


def _finished_job(database: Database, team_slug: str, state: str = "succeeded") -> int:
    with database.session_scope() as session:
        team = identity.get_team_by_slug(session, team_slug)
        sub = submission_records.create_submission(
            session, team.id, "pitch", "builtin", builtin_name="pitch", visibility="public"
        )
        return record_finished_job(
            session,
            team_id=team.id,
            submission_id=sub.id,
            config={"x": 1},
            rows=[result_records.ResultRow("semi-informed", "cosine", -1, "eer_percent", 37.5)],
            state=state,
            error_message="boom" if state == "failed" else None,
        )


def test_standard_webhooks_signature_matches_the_reference_vector() -> None:
    # The test vector of the Standard Webhooks reference libraries.
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    msg_id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    body = b'{"test": 2432232314}'
    assert sign(secret, msg_id, 1614265330, body) == (
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    )
    headers = {
        "Webhook-Id": msg_id,
        "Webhook-Timestamp": "1614265330",
        "Webhook-Signature": "v1,bm90LXRoaXM= " + sign(secret, msg_id, 1614265330, body),
    }
    assert verify(secret, headers, body, now=1614265330 + 10) == {"test": 2432232314}
    with pytest.raises(WebhookVerificationError, match="no webhook-signature"):
        verify(secret, headers, body + b" ", now=1614265330)
    with pytest.raises(WebhookVerificationError, match="more than 300 s"):
        verify(secret, headers, body, now=1614265330 + 301)


def test_webhook_routes_create_list_delete_and_hide_the_secret(
    make_api_client: Any, api_world: Any
) -> None:
    client = make_api_client()
    a, b = api_world.auth(api_world.a), api_world.auth(api_world.b)
    created = client.post(
        "/v1/webhooks",
        json={"url": "https://ci.example.org/hook", "events": ["job.succeeded"]},
        headers=a,
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["secret"].startswith("whsec_") and body["events"] == ["job.succeeded"]
    listed = client.get("/v1/webhooks", headers=a).json()
    assert [w["id"] for w in listed] == [body["id"]]
    assert "secret" not in listed[0] and body["secret"].startswith(listed[0]["secret_prefix"])
    assert client.get("/v1/webhooks", headers=b).json() == []  # per team
    assert client.get(f"/v1/webhooks/{body['id']}/deliveries", headers=b).status_code == 404
    assert client.delete(f"/v1/webhooks/{body['id']}", headers=b).status_code == 404
    bad = client.post("/v1/webhooks", json={"url": "ftp://x.org/"}, headers=a)
    assert bad.status_code == 409 and "http" in bad.json()["detail"]
    unknown = client.post(
        "/v1/webhooks", json={"url": "https://x.org/", "events": ["job.exploded"]}, headers=a
    )
    assert unknown.status_code == 422
    read_only = client.post(
        "/v1/webhooks",
        json={"url": "https://x.org/"},
        headers=api_world.auth(api_world.a_read),
    )
    assert read_only.status_code == 403
    assert client.delete(f"/v1/webhooks/{body['id']}", headers=a).status_code == 204
    assert client.get("/v1/webhooks", headers=a).json() == []


def test_job_events_are_stored_with_the_transition_and_only_for_subscribed_endpoints(
    pg_database: Database, no_sender: None
) -> None:
    with pg_database.session_scope() as session:
        team = identity.create_team(session, "hooks")
        all_events = store.create_webhook_endpoint(session, team.id, "https://a.example/h")
        store.create_webhook_endpoint(
            session, team.id, "https://b.example/h", event_types=["job.failed"]
        )
        identity.create_team(session, "bystander")
    job_id = _finished_job(pg_database, "hooks")
    _finished_job(pg_database, "bystander")
    with pg_database.session_scope() as session:
        page = store.list_deliveries(session, all_events.endpoint.team_id, all_events.endpoint.id)
        assert [d.job_id for d in page.items] == [job_id]
        delivery = page.items[0]
        assert delivery.event_type == "job.succeeded" and delivery.state == "pending"
        data = delivery.payload["data"]
        assert data["job_id"] == job_id and data["team"] == "hooks"
        assert data["summary"] == [
            {"scenario": "semi-informed", "backend": "cosine", "eer_percent": 37.5}
        ]
        total = len(store.due_delivery_ids(session))
    assert total == 1  # the job.failed-only endpoint and the other team got nothing
    _finished_job(pg_database, "hooks", state="failed")
    with pg_database.session_scope() as session:
        assert len(store.due_delivery_ids(session)) == 3
        # Each delivery's first attempt was queued in the outbox, in the same transaction.
        queued = session.query(OutboxMessage).filter(OutboxMessage.topic == DELIVER_WEBHOOK)
        assert sorted(m.payload["delivery_id"] for m in queued) == sorted(
            d.id for d in session.query(WebhookDelivery)
        )


def test_delivery_is_claimed_once_and_private_hosts_are_refused(
    pg_database: Database, receiver: Receiver, no_sender: None
) -> None:
    with pg_database.session_scope() as session:
        team = identity.create_team(session, "claims")
        store.create_webhook_endpoint(session, team.id, receiver.url, allow_private=True)
    _finished_job(pg_database, "claims")
    with pg_database.session_scope() as session:
        (delivery_id,) = store.due_delivery_ids(session)
        assert store.claim_delivery(session, delivery_id, lease_s=60) is not None
    with pg_database.session_scope() as session:
        assert store.claim_delivery(session, delivery_id, lease_s=60) is None  # leased
    # A public deployment refuses loopback URLs (SSRF): failed at once, nothing sent.
    with pg_database.session_scope() as session:
        row = session.get(WebhookDelivery, delivery_id)
        row.next_attempt_at = row.created_at  # due again
    outcome = attempt_delivery(pg_database, Settings(_env_file=None), delivery_id)  # type: ignore[call-arg]
    assert outcome.status == "failed" and "not a globally routable" in outcome.detail
    assert receiver.received == []


@pytest.fixture()
def celery_worker_services(pg_database: Database, tmp_path: Path) -> Iterator[Settings]:
    """The Celery app on Redis (unique key prefix) with a worker's services on PostgreSQL."""
    from support.workers import celery_app_on

    prefix = f"unmask-test-{uuid.uuid4().hex[:8]}:"
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "data",
        broker_url=REDIS_URL,
        webhook_retry_backoff_s=0.5,
        outbound_allow_private_hosts=True,
        webhook_timeout_s=5.0,
    )
    services = JobServices(
        pg_database, LocalBlobStore(tmp_path / "blobs", signing_key="k"), settings
    )
    # The outbox's senders: the test installs Celery's after the API client's recording ones.
    with celery_app_on(settings, services, key_prefix=prefix, outbox_senders=False):
        yield settings


def test_celery_worker_delivers_signed_event_and_retries_after_a_failure(
    pg_database: Database,
    receiver: Receiver,
    celery_worker_services: Settings,
    make_api_client: Any,
    api_world: Any,
) -> None:
    from support.workers import worker_thread
    from workers.app import app, install_outbox_senders

    # The receiver is on loopback: this deployment allows private hosts (at creation too).
    client = make_api_client(outbound_allow_private_hosts=True)
    # This process writes the job's event: it sends through Celery (the API client's start-up
    # installed recording senders).
    install_outbox_senders(app, celery_worker_services)
    auth = api_world.auth(api_world.a)
    created = client.post("/v1/webhooks", json={"url": receiver.url}, headers=auth)
    assert created.status_code == 201, created.text
    secret, webhook_id = created.json()["secret"], created.json()["id"]
    with worker_thread("cpu"):
        # The job's commit sends the delivery's outbox message: a deliver_webhook task.
        job_id = _finished_job(pg_database, "team-a")
        deadline = time.monotonic() + 60
        while len(receiver.received) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        # Let the worker record the second attempt.
        while time.monotonic() < deadline:
            log = client.get(f"/v1/webhooks/{webhook_id}/deliveries", headers=auth).json()
            if log["items"] and log["items"][0]["state"] != "pending":
                break
            time.sleep(0.1)
    assert len(receiver.received) == 2
    (first_headers, first_body, first_at), (headers, body, second_at) = receiver.received
    # Same event id on the retry; every attempt verifies with the secret shown at creation.
    assert first_headers["webhook-id"] == headers["webhook-id"]
    assert first_body == body
    event = verify(secret, headers, body)
    verify(secret, first_headers, first_body)
    assert event["type"] == "job.succeeded" and event["data"]["job_id"] == job_id
    assert event["data"]["summary"][0]["eer_percent"] == 37.5
    assert body == canonical_body(json.loads(body))
    assert second_at - first_at >= 0.5 * 0.9  # the backoff before the retry
    with pytest.raises(WebhookVerificationError):
        verify("whsec_" + "A" * 44, headers, body)
    # The delivery log over the API: a 500, then a 200.
    (delivery,) = log["items"]
    assert delivery["state"] == "succeeded" and delivery["attempts"] == 2
    assert [a["status_code"] for a in delivery["attempt_log"]] == [500, 200]
    assert delivery["attempt_log"][0]["response_excerpt"] == "nope"
    assert delivery["event_id"] == headers["webhook-id"]


def test_a_stored_url_with_an_impossible_port_fails_at_once_with_its_reason(
    pg_database: Database, no_sender: None
) -> None:
    """An endpoint stored before URLs were parsed completely: its delivery fails (not pending
    forever with no attempt), and the reason is logged."""
    with pg_database.session_scope() as session:
        team = identity.create_team(session, "ports")
        store.create_webhook_endpoint(session, team.id, "https://hooks.example/h")
        session.execute(sa_update(WebhookEndpoint).values(url="https://hooks.example:99999/h"))
    _finished_job(pg_database, "ports")
    with pg_database.session_scope() as session:
        (delivery_id,) = store.due_delivery_ids(session)
    outcome = attempt_delivery(pg_database, Settings(_env_file=None), delivery_id)  # type: ignore[call-arg]
    assert outcome.status == "failed" and "Port out of range" in outcome.detail
    with pg_database.session_scope() as session:
        row = session.get(WebhookDelivery, delivery_id)
        assert row is not None and row.state == "failed" and row.attempts == 1
        assert "Port out of range" in (row.last_error or "")
        assert store.due_delivery_ids(session) == []  # the sweep does not queue it again


def test_concurrent_registrations_keep_the_per_team_cap_exact(pg_database: Database) -> None:
    from services.platform.webhooks.endpoints import MAX_ENDPOINTS_PER_TEAM

    with pg_database.session_scope() as session:
        team_id = identity.create_team(session, "hooks-race").id
    extra = 5
    barrier = threading.Barrier(MAX_ENDPOINTS_PER_TEAM + extra)
    outcomes: list[str] = []

    def register(n: int) -> None:
        barrier.wait()  # every registration counts the team's endpoints at the same moment
        try:
            with pg_database.session_scope() as session:
                store.create_webhook_endpoint(session, team_id, f"https://h.example.org/{n}")
            outcomes.append("created")
        except Exception as exc:
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=register, args=(n,)) for n in range(barrier.parties)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["ConflictError"] * extra + ["created"] * MAX_ENDPOINTS_PER_TEAM
    with pg_database.session_scope() as session:
        assert len(store.list_webhook_endpoints(session, team_id)) == MAX_ENDPOINTS_PER_TEAM
