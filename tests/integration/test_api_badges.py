"""README badges over HTTP: the worst-case semi-informed EER, the trust mark and the colour of
a public submission's leaderboard job; 404 for private submissions, a neutral pending badge
(200) before a job succeeded, accessible colours and a tooltip, the Markdown snippet on the
submission page. Real PostgreSQL; jobs finished in the database."""

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


def _title(svg: str) -> str:
    """The badge's tooltip (its ``<title>``), which also names it for screen readers."""
    title = ET.fromstring(svg).find(f"{SVG}title")
    assert title is not None and title.text
    return title.text


def test_badge_shows_the_worst_case_eer_trust_and_colour(setup: Any, pg_database: Database) -> None:
    client, protocol_id, submission, job = setup
    public = submission("public", "public one")
    url = f"/protocols/{protocol_id}/submissions/{public}/badge.svg"
    # No succeeded job yet: a neutral pending badge, not an error a README shows as broken.
    job_id = job(public)
    pending = client.get(url)
    assert pending.status_code == 200, pending.text
    assert pending.headers["content-type"].startswith("image/svg+xml")
    assert "pending" in _texts(pending.text) and "unmask EER" in _texts(pending.text)
    assert badges.BADGE_FILLS["lightgrey"][0] in pending.text
    assert pending.headers["cache-control"] == "public, max-age=60"
    assert "no public result yet" in _title(pending.text)
    _succeed(pg_database, job_id, {"cosine": 37.9, "plda": 18.25}, trustworthy=True)
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("image/svg+xml")
    svg = response.text
    texts = _texts(svg)
    # The worst case over back-ends (18.2 %, not the cosine 37.9 %), the trust mark; a short
    # label, the scenario and the mark's meaning in the tooltip.
    assert "18.2 % ✓" in texts and "unmask EER" in texts
    assert "semi-informed attacker" in _title(svg) and "passed the trust checks" in _title(svg)
    assert badges.eer_colour(18.25) == "orange"
    assert badges.BADGE_FILLS["orange"][0] in svg
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
    assert "n/a ? unchecked" in _texts(badges.badge_svg(data))
    # A failed trust check says what it means on the badge and in its tooltip.
    weak = badges.badge_svg(badges.BadgeData(1, 2, 44.0, False, "green"))
    assert "44.0 % ⚠ weak attacker" in _texts(weak)
    assert "may overestimate privacy" in _title(weak)


def _luminance(colour: str) -> float:
    """WCAG relative luminance of ``#rrggbb``."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_badge_text_has_accessible_contrast_on_every_colour() -> None:
    """WCAG AA for small text (4.5:1) on each fill, as drawn: the value half's fill and text
    colour, and the label half (white on anybadge's #555)."""
    for name, (fill, text) in badges.BADGE_FILLS.items():
        svg = badges.badge_svg(badges.BadgeData(1, 2, 30.0, True, name))
        assert f'fill="{fill}"' in svg and f'<g fill="{text}"' in svg, name
        assert _contrast(fill, text) >= 4.5, (name, _contrast(fill, text))
    assert _contrast("#555555", "#ffffff") >= 4.5
    # White on anybadge's yellow, the colour this replaced, would fail.
    assert _contrast("#dfb317", "#ffffff") < 4.5
