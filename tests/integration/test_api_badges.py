"""README badges over HTTP: the worst-case semi-informed EER, the trust mark and the colour of
a public submission's leaderboard job; 404 for private submissions, 409 before a job succeeded,
the Markdown snippet on the submission page. Real PostgreSQL; jobs finished in the database."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from services.platform import badges, results
from services.platform.jobs import records as job_records
from services.platform.leaderboard import record_report_summary
from services.storage.db import Database

pytestmark = pytest.mark.integration

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture()
def setup(make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]) -> Any:
    client = make_api_client()
    admin = api_world.auth(api_world.admin)
    a = api_world.auth(api_world.a)
    protocol = client.post("/v1/admin/protocols", json=api_protocol_body, headers=admin).json()

    def submission(visibility: str, name: str) -> int:
        body = {
            "kind": "builtin",
            "name": name,
            "visibility": visibility,
            "builtin": {"name": "pitch", "params": {"semitones": 2}},
        }
        response = client.post("/v1/submissions", json=body, headers=a)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def job(submission_id: int) -> int:
        body = {"submission_id": submission_id, "protocol_id": protocol["id"]}
        response = client.post("/v1/jobs", json=body, headers=a)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    return client, protocol["id"], submission, job


def _succeed(
    database: Database, job_id: int, eers: dict[str, float], trustworthy: bool | None
) -> None:
    with database.session_scope() as session:
        job_records.transition_job(session, job_id, "running")
        rows = [
            results.ResultRow("semi-informed", backend, -1, "eer_percent", eer)
            for backend, eer in eers.items()
        ] + [results.ResultRow("ignorant", "cosine", -1, "eer_percent", 2.0)]
        results.record_results_and_artifacts(
            session,
            job_id,
            results=rows,
            stage_id=job_records.get_stage(session, job_id, "report").id,
        )
        record_report_summary(
            session, job_id, trustworthy=trustworthy, trust_reasons=[], det_curves={}
        )
        job_records.transition_job(session, job_id, "succeeded")


def _texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_badge_shows_the_worst_case_eer_trust_and_colour(setup: Any, pg_database: Database) -> None:
    client, protocol_id, submission, job = setup
    public = submission("public", "public one")
    url = f"/protocols/{protocol_id}/submissions/{public}/badge.svg"
    # No succeeded job yet: a clear 409.
    job_id = job(public)
    pending = client.get(url)
    assert pending.status_code == 409
    assert "no succeeded job under protocol" in pending.json()["detail"]
    _succeed(pg_database, job_id, {"cosine": 37.9, "plda": 18.25}, trustworthy=True)
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("image/svg+xml")
    svg = response.text
    texts = _texts(svg)
    # The worst case over back-ends (18.2 %, not the cosine 37.9 %), the trust mark.
    assert "18.2 % ✓" in texts and "unmask EER (semi-informed)" in texts
    assert badges.eer_colour(18.25) == "orange"
    assert "#FE7D37" in svg.upper()  # anybadge's orange
    # Self-contained: no external font, image or stylesheet.
    assert "http://" not in svg.replace("http://www.w3.org/", "")
    assert "https://" not in svg and "@import" not in svg and "<image" not in svg
    # The submission page carries the Markdown snippet.
    page = client.get(f"/submissions/{public}")
    assert f"/protocols/{protocol_id}/submissions/{public}/badge.svg)" in page.text
    assert f"(http://testserver/submissions/{public})" in page.text


def test_badge_of_a_private_submission_or_unknown_protocol_is_404(
    setup: Any, pg_database: Database
) -> None:
    client, protocol_id, submission, job = setup
    private = submission("private", "private one")
    _succeed(pg_database, job(private), {"cosine": 45.0}, trustworthy=False)
    response = client.get(f"/protocols/{protocol_id}/submissions/{private}/badge.svg")
    assert response.status_code == 404 and "not found" in response.json()["detail"]
    response = client.get(f"/protocols/999/submissions/{private}/badge.svg")
    assert response.status_code == 404


def test_badge_colours_follow_the_eer_thresholds() -> None:
    assert [
        badges.eer_colour(v) for v in (None, 0.0, 9.99, 10.0, 24.9, 25.0, 39.9, 40.0, 50.0)
    ] == ["lightgrey", "red", "red", "orange", "orange", "yellow", "yellow", "green", "green"]
    data = badges.BadgeData(1, 2, None, None, "lightgrey")
    assert "n/a ?" in _texts(badges.badge_svg(data))
