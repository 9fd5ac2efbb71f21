"""The compare page, README badges and a challenge's phases in headless Chromium (Playwright)
against a running app (uvicorn on loopback, SQLite) seeded with two public submissions' results,
DET points and kept trials (the paired interval and the per-speaker EER scatter), and a third
whose job ran in a phase whose results are still hidden.

Screenshots: ``test-artifacts/screenshots/challenge-*.png`` (gitignored); the tests check they
were written.
"""

from __future__ import annotations

import base64
import datetime as dt
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.platform import badges, identity, phases, protocols, results, submissions
from services.platform.leaderboard import record_report_summary
from services.settings import Settings
from services.storage.blob_interface import BlobStore
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from services.storage.models import Job
from support.seeding import record_finished_job
from support.trials import keep_trials, trial_set_bytes

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "screenshots"
HMAC_KEY = "browser-challenge-key"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
SCREENSHOTS = (
    "challenge-compare.png",
    "challenge-badge.png",
    "challenge-badges-zoomed.png",
    "challenge-leaderboard-hidden-phase.png",
)
HIDDEN_NAME = "hidden final entry"


def _det(eer: float) -> dict[str, Any]:
    """A DET curve through (eer, eer) (fractions) with its EER (%)."""
    e = eer / 100
    return {
        "seed": 0,
        "eer": eer,
        "pfa": [0.001, e / 4, e, min(0.99, 3 * e), 0.99],
        "pmiss": [0.99, min(0.99, 2.5 * e), e, e / 4, 0.001],
    }


def _seed(
    database: Database,
    store: BlobStore,
    team_id: int,
    protocol_id: int,
    name: str,
    eer: float,
    wer: float,
) -> int:
    with database.session_scope() as session:
        sub = submissions.create_submission(
            session,
            team_id,
            name,
            "container",
            visibility="public",
            container_image="ghcr.io/lab/anon",
            container_digest="sha256:" + ("c" if eer > 30 else "d") * 64,
        )
        job_id = record_finished_job(
            session,
            team_id=team_id,
            submission_id=sub.id,
            protocol_id=protocol_id,
            config={"name": name},
            rows=[
                results.ResultRow("semi-informed", "cosine", -1, "eer_percent", eer),
                results.ResultRow("semi-informed", "cosine", -1, "min_cllr_bits", eer / 55),
                results.ResultRow("ignorant", "cosine", -1, "eer_percent", eer / 3),
                results.ResultRow("utility", "-", -1, "wer_increase_percent", wer),
            ],
        )
        record_report_summary(
            session,
            job_id,
            trustworthy=eer > 30,
            trust_reasons=[],
            det_curves={"semi-informed|cosine": _det(eer), "ignorant|cosine": _det(eer / 3)},
        )
        # Its kept trials (higher EER, less separation): the paired interval and scatter.
        keep_trials(session, store, job_id, trial_set_bytes(4.0 - eer / 20))
        return sub.id


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    import uvicorn

    from api.app import create_app
    from api.server import server_options

    folder = tmp_path_factory.mktemp("challenge-site")
    url = f"sqlite:///{folder / 'unmask.db'}"
    upgrade_database(url)
    database = Database(url)
    with database.session_scope() as session:
        lab = identity.create_team(session, "speech-lab")
        protocol = protocols.create_protocol(
            session,
            "synthetic-compare",
            body={"config": {"scenarios": ["ignorant", "semi-informed"]}},
        )
        lab_id, protocol_id = lab.id, protocol.id
    store = LocalBlobStore(folder / "blobs", signing_key=HMAC_KEY)
    a = _seed(database, store, lab_id, protocol_id, "pitch shift", 18.4, 2.0)
    b = _seed(database, store, lab_id, protocol_id, "voice conversion", 41.2, 7.5)
    now = dt.datetime.now(dt.UTC)
    day = dt.timedelta(days=1)
    with database.session_scope() as session:
        # A past phase whose results were revealed, and the current one, still hidden.
        phases.create_phase(
            session,
            protocol_id=protocol_id,
            spec=phases.PhaseSpec(
                "qualifying", now - 20 * day, now - 10 * day, None, "hidden", now - 5 * day
            ),
        )
        final = phases.create_phase(
            session,
            protocol_id=protocol_id,
            spec=phases.PhaseSpec("final", now - day, now + 10 * day, 3, "hidden", now + 20 * day),
        )
        final_id = final.id
        token = identity.issue_team_token(
            session, "speech-lab", hmac_key=HMAC_KEY, scopes=["read"]
        ).plaintext
    hidden = _seed(database, store, lab_id, protocol_id, HIDDEN_NAME, 47.0, 3.0)
    with database.session_scope() as session:
        for job in session.query(Job).filter(Job.submission_id == hidden):
            job.phase_id = final_id
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        blob_dir=folder / "blobs",
        token_hmac_key=HMAC_KEY,
    )
    app = create_app(settings, database=database, blob_store=store, senders={})
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # The image's server options (``python -m api.server``), so the pages meet the same server.
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **server_options())
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield {
        "url": f"http://127.0.0.1:{port}",
        "protocol": protocol_id,
        "a": a,
        "b": b,
        "hidden": hidden,
        "token": token,
    }
    server.should_exit = True
    thread.join(timeout=10)
    database.dispose()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed (scripts/ensure_browser.sh)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name in SCREENSHOTS:
        (ARTIFACTS / name).unlink(missing_ok=True)
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1280, "height": 900},
        )
        yield context
        context.close()


def test_compare_two_rows_from_the_leaderboard(site: dict[str, Any], browser: Any) -> None:
    page = browser.new_page()
    page.goto(f"{site['url']}/protocols/{site['protocol']}")
    form = page.locator("#compare-form")
    form.locator("select[name=a]").select_option(str(site["a"]))
    form.locator("select[name=b]").select_option(str(site["b"]))
    form.locator("button").click()
    page.wait_for_url("**/compare?*")
    assert page.locator("#compare-sides").inner_text().count("speech-lab") == 2
    # The page leads with the verdict against the headline (semi-informed) attacker.
    verdict = page.inner_text("#compare-verdict")
    assert verdict.startswith(
        "voice conversion (b) is more private than pitch shift (a) by 22.8 EER points against "
        "the semi-informed attacker (cosine), 95 % CI of b − a +"
    ), verdict
    headline = page.locator("#compare-headline tbody tr")
    assert set(headline.evaluate_all("rows => rows.map(r => r.dataset.scenario)")) == {
        "semi-informed"
    }
    # The full table is below, collapsed, the headline scenario first.
    assert page.locator("#compare-all").get_attribute("open") is None
    scenarios = page.eval_on_selector_all(
        "#compare-metrics tbody tr", "rows => rows.map(r => r.dataset.scenario)"
    )
    assert scenarios[0] == "semi-informed" and scenarios[-1] == "ignorant", scenarios
    box = page.locator("#compare-verdict").bounding_box()
    assert box is not None and box["y"] < 400, box  # above the fold
    page.click("#compare-all summary")
    eer = page.locator(
        '#compare-metrics tr[data-metric="eer_percent"][data-scenario="semi-informed"]'
    )
    assert eer.locator("td.a").inner_text() == "18.4" and eer.locator("td.b").inner_text() == "41.2"
    assert eer.locator("td.diff").inner_text() == "+22.8"
    assert eer.locator("td.better").inner_text() == "b"
    low, high = (float(x) for x in eer.locator("td.paired").inner_text().split(" to "))
    assert 0 < low < high  # b's kept trials separate less: a higher EER, beyond the interval
    wer = page.locator('#compare-utility tr[data-metric="wer_increase_percent"]')
    assert wer.locator("td.better").inner_text() == "a"
    images = page.locator("img.compare-det")
    assert images.count() == 2
    assert page.locator("img.compare-per-speaker").count() == 1
    page.wait_for_function(
        "() => [...document.querySelectorAll('img.compare-det, img.compare-per-speaker')]"
        ".every(i => i.complete && i.naturalWidth > 300)"
    )
    page.screenshot(path=str(ARTIFACTS / "challenge-compare.png"), full_page=True)
    page.close()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_badge_renders_and_its_markdown_is_on_the_submission_page(
    site: dict[str, Any], browser: Any
) -> None:
    page = browser.new_page()
    page.goto(f"{site['url']}/submissions/{site['b']}")
    snippet = page.locator("#badge-markdown").inner_text()
    assert snippet.startswith("[![Unmask privacy](")
    assert f"/protocols/{site['protocol']}/submissions/{site['b']}/badge.svg)" in snippet
    badge = page.locator("#badge-image")
    page.wait_for_function(
        "() => { const i = document.getElementById('badge-image');"
        " return i.complete && i.naturalWidth > 100; }"
    )
    box = badge.bounding_box()
    assert box is not None and box["height"] == 20 and 100 < box["width"] < 200
    badge.screenshot(path=str(ARTIFACTS / "challenge-badge.png"))
    # The three kinds side by side, three times their size (to look at): trusted, a weak
    # attacker's and the pending badge of a submission whose phase is still hidden.
    badge_base = f"{site['url']}/protocols/{site['protocol']}/submissions"
    # Plus the yellow one (dark text) and an unchecked one, drawn by the same function.
    others = "".join(
        f"<p><img style='height:60px' src='data:image/svg+xml;base64,{_b64(svg)}'></p>"
        for svg in (
            badges.badge_svg(badges.BadgeData(0, 0, 31.5, True, badges.eer_colour(31.5))),
            badges.badge_svg(badges.BadgeData(0, 0, 8.0, None, badges.eer_colour(8.0))),
        )
    )
    page.set_content(
        "<body style='margin:8px;background:#fff'>"
        + "".join(
            f"<p><img style='height:60px' src='{badge_base}/{sid}/badge.svg'></p>"
            for sid in (site["b"], site["a"], site["hidden"])
        )
        + others
        + "</body>"
    )
    page.wait_for_function(
        "() => [...document.images].every(i => i.complete && i.naturalWidth > 50)"
    )
    page.screenshot(path=str(ARTIFACTS / "challenge-badges-zoomed.png"), full_page=True)
    pending = page.request.get(f"{badge_base}/{site['hidden']}/badge.svg")
    assert pending.status == 200 and ">pending<" in pending.text()
    weak = page.request.get(f"{badge_base}/{site['a']}/badge.svg").text()
    assert "⚠ weak attacker" in weak and "<title>" in weak
    # Opened alone, the SVG shows the EER with its trust mark and makes no other request.
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    badge_url = f"{site['url']}/protocols/{site['protocol']}/submissions/{site['b']}/badge.svg"
    page.goto(badge_url)
    assert "41.2 % ✓" in page.content()
    assert requests == [badge_url]
    page.close()


def test_hidden_phase_rows_are_marked_for_their_team_and_phases_say_when_revealed(
    site: dict[str, Any], browser: Any
) -> None:
    page = browser.new_page()
    leaderboard = f"{site['url']}/protocols/{site['protocol']}"
    page.goto(leaderboard)
    assert HIDDEN_NAME not in page.content()  # the public does not see it
    phases_text = {
        row.get_attribute("data-phase"): row.inner_text()
        for row in page.locator("#phases tbody tr").all()
    }
    assert "revealed at " in phases_text["qualifying"], phases_text
    assert "hidden until " in phases_text["final"], phases_text
    page.goto(f"{site['url']}/login?next=/protocols/{site['protocol']}")
    page.fill("#token", site["token"])
    page.click("button[type=submit]")
    page.wait_for_url(leaderboard)
    row = page.locator(f'tr[data-submission="{site["hidden"]}"]')
    assert row.count() == 1 and "hidden-phase" in (row.get_attribute("class") or "")
    marker = row.locator(".badge.hidden-phase")
    assert marker.inner_text() == "hidden · final"
    assert "only this team and administrators" in (marker.get_attribute("title") or "")
    # The public rows carry no marker.
    assert page.locator(f'tr[data-submission="{site["a"]}"] .badge.hidden-phase').count() == 0
    page.screenshot(path=str(ARTIFACTS / "challenge-leaderboard-hidden-phase.png"), full_page=True)
    # Its submission page says the same to the team.
    page.goto(f"{site['url']}/submissions/{site['hidden']}")
    assert page.inner_text("#hidden-phase") == "hidden · final"
    assert "only this team and administrators" in page.inner_text("#hidden-phase-note")
    page.goto(f"{site['url']}/submissions/{site['a']}")
    assert page.locator("#hidden-phase").count() == 0
    page.click("text=Sign out")
    page.close()


def test_challenge_screenshots_are_written() -> None:
    for name in SCREENSHOTS:
        path = ARTIFACTS / name
        assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
