"""Server-rendered pages on SQLite: what anonymous visitors and signed-in teams see, sorting,
login cookies. (The browser tests in tests/browser drive the same pages in Chromium.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.platform import identity, protocols, results, submissions
from services.platform.jobs import records as job_records
from services.platform.leaderboard import LeaderboardTableRow, sort_rows
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from support.seeding import record_finished_job

HMAC_KEY = "pages-test-key"
PROTOCOL_BODY = {
    "config": {"scenarios": ["ignorant", "semi-informed"], "backends": ["cosine"]},
    "leaderboard": {"metric": "eer_percent"},
}
PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)


class World:
    """Two teams; public, private and unevaluated submissions with results and a plot."""

    def __init__(self, database: Database, store: LocalBlobStore) -> None:
        self.database = database
        with database.session_scope() as session:
            lab = identity.create_team(session, "lab")
            other = identity.create_team(session, "other")
            self.protocol_id = protocols.create_protocol(
                session, "synthetic", body=PROTOCOL_BODY
            ).id
            self.lab_token = identity.issue_team_token(
                session, "lab", hmac_key=HMAC_KEY, scopes=["read"]
            ).plaintext
            self.other_token = identity.issue_team_token(
                session, "other", hmac_key=HMAC_KEY, scopes=["submit", "read"]
            ).plaintext
            self.other_token_id = identity.verify_token(
                session, self.other_token, hmac_key=HMAC_KEY
            ).id
            lab_id, other_id = lab.id, other.id
        info = store.put_bytes(
            "jobs/x/plots/det-semi-informed-cosine.png", PNG_1PX, media_type="image/png"
        )
        self.baseline = self._evaluated(lab_id, "pitch baseline", "public", 31.0, 0.20, info)
        self.strong = self._evaluated(lab_id, "strong anonymizer", "public", 45.0, None, None)
        self.secret = self._evaluated(other_id, "SECRET-private-anon", "private", 49.0, 0.01, None)
        self.secret_job = self.job_of(self.secret)

    def _evaluated(
        self,
        team_id: int,
        name: str,
        visibility: str,
        eer: float,
        meand: float | None,
        plot: Any,
    ) -> int:
        with self.database.session_scope() as session:
            builtin = name.startswith("pitch")
            sub = submissions.create_submission(
                session,
                team_id,
                name,
                "builtin" if builtin else "container",
                visibility=visibility,
                builtin_name="pitch" if builtin else None,
                container_image=None if builtin else "ghcr.io/lab/anon",
                container_digest=None if builtin else "sha256:" + "a" * 64,
            )
            rows = [
                results.ResultRow("semi-informed", "cosine", -1, "eer_percent", eer),
                results.ResultRow("semi-informed", "cosine", 0, "eer_percent", eer),
                results.ResultRow("semi-informed", "cosine", 0, "eer_ci95_percent_low", eer - 3),
                results.ResultRow("semi-informed", "cosine", 0, "eer_ci95_percent_high", eer + 3),
                results.ResultRow("ignorant", "cosine", -1, "eer_percent", eer / 2),
            ]
            if meand is not None:
                rows.append(
                    results.ResultRow(
                        "semi-informed", "cosine", -1, "srd_mean_disclosure_bits", meand
                    )
                )
            artifacts = []
            if plot is not None:
                artifacts.append(
                    results.ArtifactRecord(plot.key, plot.size_bytes, plot.sha256, "image/png")
                )
            record_finished_job(
                session,
                team_id=team_id,
                submission_id=sub.id,
                protocol_id=self.protocol_id,
                config={"name": name},
                stage_names=["score", "report"],
                rows=rows,
                artifacts=artifacts,
            )
            return sub.id

    def job_of(self, submission_id: int) -> int:
        with self.database.session_scope() as session:
            page = job_records.list_jobs(session, submission_id=submission_id)
            return page.items[0].id


def _world_client(tmp_path: Path, **settings: Any) -> Iterator[tuple[World, Any]]:
    from fastapi.testclient import TestClient

    from api.app import create_app

    url = f"sqlite:///{tmp_path / 'pages.db'}"
    upgrade_database(url)
    database = Database(url)
    store = LocalBlobStore(tmp_path / "blobs", signing_key=HMAC_KEY)
    world = World(database, store)
    app_settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        blob_dir=tmp_path / "blobs",
        token_hmac_key=HMAC_KEY,
        **settings,
    )
    app = create_app(app_settings, database=database, blob_store=store)
    with TestClient(app) as client:
        yield world, client
    database.dispose()


@pytest.fixture
def world_client(tmp_path: Path) -> Iterator[tuple[World, Any]]:
    yield from _world_client(tmp_path)


LOGIN_TOKEN_RE = re.compile(r'action="/login".*?name="csrf_token" value="([0-9a-f]+)"', re.DOTALL)
"""The login form's CSRF field (a signed-in page also has the sign-out form's)."""


def _login(client: Any, token: str, next: str | None = None) -> Any:
    """Sign in like a browser: the form (its CSRF cookie and field), then the POST."""
    form = client.get("/login")
    match = LOGIN_TOKEN_RE.search(form.text)
    assert match is not None, form.text
    data = {"token": token, "csrf_token": match.group(1)}
    if next is not None:
        data["next"] = next
    return client.post("/login", data=data, follow_redirects=False)


def _rows(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr data-submission="(\d+)"', html)]


def test_anonymous_leaderboard_lists_public_submissions_ranked_and_never_private(
    world_client: tuple[World, Any],
) -> None:
    world, client = world_client
    page = client.get(f"/protocols/{world.protocol_id}")
    assert page.status_code == 200
    assert page.headers["cache-control"] == "private, no-store"
    # Ranked by semi-informed EER, higher (more privacy) first.
    assert _rows(page.text) == [world.strong, world.baseline]
    assert "SECRET-private-anon" not in page.text
    assert "badge baseline" in page.text  # the built-in one is marked
    assert "[28.0, 34.0]" in page.text  # the EER interval of the baseline
    index = client.get("/")
    assert "synthetic" in index.text and "2 ranked submissions" in index.text
    # Every route to the private submission answers 404 to the public.
    assert client.get(f"/submissions/{world.secret}").status_code == 404
    assert client.get(f"/jobs/{world.secret_job}").status_code == 404
    assert client.get(f"/jobs/{world.secret_job}/status.json").status_code == 404
    assert "SECRET" not in client.get(f"/submissions/{world.secret}").text


def test_sorting_puts_missing_values_last_in_both_directions(
    world_client: tuple[World, Any],
) -> None:
    world, client = world_client
    base = f"/protocols/{world.protocol_id}?sort=srd_mean_disclosure_bits"
    # "strong" has no SRD value: last whichever way the column is sorted.
    assert _rows(client.get(base + "&order=asc").text) == [world.baseline, world.strong]
    assert _rows(client.get(base + "&order=desc").text) == [world.baseline, world.strong]
    by_eer_asc = _rows(
        client.get(f"/protocols/{world.protocol_id}?sort=eer_percent&order=asc").text
    )
    assert by_eer_asc == [world.baseline, world.strong]
    by_team = client.get(f"/protocols/{world.protocol_id}?sort=team&order=desc").text
    assert _rows(by_team) == [world.baseline, world.strong]  # ties keep submission order
    # Header links flip the order of the active column.
    assert "sort=srd_mean_disclosure_bits&amp;order=desc" in client.get(base + "&order=asc").text


def test_sort_rows_keeps_missing_last_and_ties_in_submission_order() -> None:
    import datetime as dt

    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def row(i: int, value: float | None) -> LeaderboardTableRow:
        return LeaderboardTableRow(
            i,
            f"s{i}",
            "builtin",
            "public",
            "t",
            i,
            t0 + dt.timedelta(seconds=i),
            None,
            values={("s", "m"): value},
        )

    rows = [row(1, None), row(2, 3.0), row(3, 1.0), row(4, 3.0), row(5, float("nan"))]
    up = [r.submission_id for r in sort_rows(rows, key=("s", "m"))]
    down = [r.submission_id for r in sort_rows(rows, key=("s", "m"), descending=True)]
    assert up == [3, 2, 4, 1, 5]
    assert down == [2, 4, 3, 1, 5]


def test_login_cookie_shows_the_team_its_private_submissions_until_revoked(
    world_client: tuple[World, Any],
) -> None:
    world, client = world_client
    bad = _login(client, "unm_nope", "/")
    assert bad.status_code == 401 and "unknown API token" in bad.text
    response = _login(client, world.other_token, f"/protocols/{world.protocol_id}")
    assert response.status_code == 303
    assert response.headers["location"] == f"/protocols/{world.protocol_id}"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert world.other_token not in cookie  # the cookie never carries the token
    page = client.get(f"/protocols/{world.protocol_id}")
    assert _rows(page.text)[0] == world.secret and "badge private" in page.text
    assert client.get(f"/submissions/{world.secret}").status_code == 200
    status = client.get(f"/jobs/{world.secret_job}/status.json").json()
    assert status["state"] == "succeeded" and status["finished"] is True
    # Another team's session does not see it.
    client.cookies.clear()
    _login(client, world.lab_token)
    assert "SECRET-private-anon" not in client.get(f"/protocols/{world.protocol_id}").text
    # Revoking the token ends the page session at once.
    client.cookies.clear()
    _login(client, world.other_token)
    with world.database.session_scope() as session:
        identity.revoke_token(session, world.other_token_id)
    assert "SECRET-private-anon" not in client.get(f"/protocols/{world.protocol_id}").text
    # A tampered cookie is anonymous.
    client.cookies.set("unmask_session", "1.99999999999.deadbeef")
    assert "SECRET" not in client.get(f"/protocols/{world.protocol_id}").text


def test_login_redirects_only_to_local_paths(world_client: tuple[World, Any]) -> None:
    world, client = world_client
    for target in ("https://evil.example", "//evil.example/x", "/\\evil"):
        response = _login(client, world.lab_token, target)
        assert response.headers["location"] == "/"


def test_login_refuses_a_post_without_its_forms_csrf_token(
    world_client: tuple[World, Any],
) -> None:
    """Login CSRF: another site's form cannot sign a visitor in (as the attacker's team)."""
    world, client = world_client
    forged = {"token": world.other_token, "next": "/"}
    response = client.post("/login", data=forged, follow_redirects=False)
    assert response.status_code == 403
    assert "unmask_session" not in response.headers.get("set-cookie", "")
    # The form's value of another browser (the attacker's own) does not fit this browser.
    attacker_form = client.get("/login").text
    token = LOGIN_TOKEN_RE.search(attacker_form)
    assert token is not None
    client.cookies.clear()
    client.cookies.set("unmask_login_csrf", "A" * 43, path="/login")
    response = client.post(
        "/login", data={**forged, "csrf_token": token.group(1)}, follow_redirects=False
    )
    assert response.status_code == 403
    # The login form's own cookie: SameSite=Strict, HttpOnly, only sent to /login.
    client.cookies.clear()
    cookie = client.get("/login").headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/login" in cookie
    assert _login(client, world.other_token).status_code == 303


def test_logout_needs_the_sign_out_forms_token(world_client: tuple[World, Any]) -> None:
    """Logout CSRF: another site's form cannot sign a visitor out (the cookie deletion of the
    answer would work even on a request that carried no cookie)."""
    world, client = world_client
    assert _login(client, world.lab_token).status_code == 303
    page = client.get("/")
    match = re.search(
        r'action="/logout".*?name="csrf_token" value="([0-9a-f]+)"', page.text, re.DOTALL
    )
    assert match is not None, page.text
    for forged in ({}, {"csrf_token": "0" * 64}):
        response = client.post("/logout", data=forged, follow_redirects=False)
        assert response.status_code == 403
        assert "unmask_session" not in response.headers.get("set-cookie", "")
    assert "team <strong>" in client.get("/").text  # still signed in
    response = client.post("/logout", data={"csrf_token": match.group(1)}, follow_redirects=False)
    assert response.status_code == 303
    assert 'unmask_session=""' in response.headers["set-cookie"]
    # Another session's token does not fit this browser's cookie.
    assert _login(client, world.other_token).status_code == 303
    response = client.post("/logout", data={"csrf_token": match.group(1)}, follow_redirects=False)
    assert response.status_code == 403


def test_pages_and_api_send_security_headers(world_client: tuple[World, Any]) -> None:
    world, client = world_client
    job_path = f"/jobs/{world.job_of(world.baseline)}"
    for path in ("/", job_path, "/v1/health/live", "/login"):
        response = client.get(path)
        assert response.headers["x-frame-options"] == "DENY", path
        assert response.headers["x-content-type-options"] == "nosniff", path
        csp = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp, path
        script_src = csp.split("script-src", 1)[1].split(";", 1)[0]
        assert "'nonce-" in script_src and "'unsafe-inline'" not in script_src, path
    # The job page's inline script carries this response's nonce, so the policy allows it.
    page = client.get(job_path)
    nonce = re.search(r"'nonce-([^']+)'", page.headers["content-security-policy"])
    assert nonce is not None and f'<script nonce="{nonce.group(1)}">' in page.text
    other = client.get(job_path).headers["content-security-policy"]
    assert other != page.headers["content-security-policy"]  # a fresh nonce per response


def test_failed_authentications_are_rate_limited_per_address(tmp_path: Path) -> None:
    """300 bad tokens in a few seconds were all answered; now the address is blocked (429)."""
    for world, client in _world_client(tmp_path, auth_max_failures=5, auth_failure_window_s=60):
        bad = {"Authorization": "Bearer unm_" + "x" * 43}
        codes = [client.get("/v1/me", headers=bad).status_code for _ in range(8)]
        assert codes == [401] * 5 + [429] * 3
        blocked = client.get("/v1/me", headers=bad)
        assert int(blocked.headers["retry-after"]) > 0
        assert blocked.headers["content-type"].startswith("application/problem+json")
        # Blocked means blocked: a right token gets no answer from this address either.
        good = {"Authorization": f"Bearer {world.lab_token}"}
        assert client.get("/v1/me", headers=good).status_code == 429
        assert client.get(f"/v1/protocols/{world.protocol_id}", headers=good).status_code == 429
        # The page login counts and refuses the same way.
        page = _login(client, world.lab_token)
        assert page.status_code == 429 and "too many failed sign-ins" in page.text


def test_submission_page_serves_its_plots_with_the_same_access_check(
    world_client: tuple[World, Any],
) -> None:
    world, client = world_client
    page = client.get(f"/submissions/{world.baseline}")
    assert page.status_code == 200
    assert "DET curves" in page.text and "Results (mean" in page.text
    src = re.search(r'<img src="([^"]+)"', page.text)
    assert src is not None
    image = client.get(src.group(1))
    assert image.status_code == 200 and image.content == PNG_1PX
    assert image.headers["content-type"] == "image/png"
    download = client.get(src.group(1) + "?download=1")
    assert download.headers["content-disposition"].startswith("attachment;")
    # The same artifact id under the private job's path is not served.
    artifact_id = src.group(1).rsplit("/", 1)[1]
    assert client.get(f"/jobs/{world.secret_job}/artifacts/{artifact_id}").status_code == 404


def test_a_client_disconnecting_mid_upload_is_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Not an unhandled error with a traceback: a warning naming the route, nothing stored."""
    import asyncio
    import logging

    from api.app import create_app

    url = f"sqlite:///{tmp_path / 'pages.db'}"
    upgrade_database(url)
    database = Database(url)
    store = LocalBlobStore(tmp_path / "blobs", signing_key=HMAC_KEY)
    world = World(database, store)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        blob_dir=tmp_path / "blobs",
        token_hmac_key=HMAC_KEY,
    )
    app = create_app(settings, database=database, blob_store=store, senders={})
    messages = [
        {"type": "http.request", "body": b"\0" * 65536, "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/submissions/archive",
        "raw_path": b"/v1/submissions/archive",
        "query_string": f"name=cut&protocol_id={world.protocol_id}".encode(),
        "headers": [
            (b"authorization", f"Bearer {world.other_token}".encode()),
            (b"content-type", b"application/octet-stream"),
            (b"host", b"testserver"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    with caplog.at_level(logging.INFO):
        asyncio.run(app(scope, receive, send))
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert errors == []
    lines = [r.getMessage() for r in caplog.records if "disconnect" in r.getMessage()]
    assert lines == ["client disconnected during POST /v1/submissions/archive"]
    from sqlalchemy import select

    from services.storage.models import Submission

    with database.session_scope() as session:
        assert "cut" not in session.scalars(select(Submission.name)).all()
    database.dispose()
