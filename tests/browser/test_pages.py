"""The pages in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) against a
running app (uvicorn on a loopback port) with REAL results: the in-process pipeline runs once on a
tiny synthetic config and its report (results.json + plots) is recorded through the storage layer
exactly as the workers' report phase does (``upload_report``, ``result_rows_from_document``).

Screenshots go to ``test-artifacts/screenshots/`` (gitignored); a test checks they were written.
Chromium is installed by ``scripts/ensure_browser.sh``; without it these tests are skipped.
"""

from __future__ import annotations

import copy
import datetime as dt
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from services.platform import identity, protocols, results, submissions
from services.platform.jobs import records as job_records
from services.platform.leaderboard import record_report_summary
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from support.configs import tiny_config
from support.seeding import record_finished_job

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "screenshots"
SCREENSHOTS = (
    "pages-protocols.png",
    "pages-leaderboard.png",
    "pages-leaderboard-plda.png",
    "pages-metrics.png",
    "pages-submission.png",
    "pages-job-running.png",
    "pages-leaderboard-signed-in.png",
    "pages-leaderboard-utility.png",
)
UNDER_TRAINED = "attacker under-trained: VER_S 71.0 % above 50.0 %"
JOB_SECONDS = 270
"""How long before its finish the real submission's job started (4.5 minutes)."""
HMAC_KEY = "browser-test-key"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# The tiny evaluation with one back-end: ~1 minute on 2 cores.
TINY: dict[str, Any] = tiny_config(backends=["cosine"])

if not CHROMIUM.exists():
    pytestmark.append(
        pytest.mark.skip(reason="no /usr/bin/chromium (run scripts/ensure_browser.sh)")
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Site:
    """The running app and what the tests look for."""

    url: str
    database: Database
    protocol_id: int
    real_submission: int
    real_job: int
    other_submission: int
    private_name: str
    private_token: str
    running_job: int
    utility_protocol_id: int = 0
    utility_submissions: dict[str, int] | None = None


def _record_report(
    database: Database, store: LocalBlobStore, team_id: int, protocol_id: int, out_dir: Path
) -> tuple[int, int]:
    """A public built-in submission whose job's report is the pipeline's real output."""
    import json

    from services.platform.results.document import (
        report_summary_from_document,
        result_rows_from_document,
        upload_report,
    )

    with database.session_scope() as session:
        sub = submissions.create_submission(
            session,
            team_id,
            "pitch (built-in)",
            "builtin",
            builtin_name="pitch",
            builtin_params={},
            visibility="public",
            description="Shifts the pitch by a fixed number of semitones (the built-in baseline).",
            paper_url="https://arxiv.org/abs/2401.00001",
            code_url="https://github.com/unmask/unmask",
        )
        job = job_records.create_job(
            session,
            team_id=team_id,
            submission_id=sub.id,
            protocol_id=protocol_id,
            config=TINY,
            stage_names=["corpus", "anonymize", "train", "embed", "score", "report"],
        ).job
        job_records.transition_job(session, job.id, "running")
        for stage in job.stages:
            job_records.transition_stage(session, stage.id, "succeeded")
        # As a platform job would: started 4.5 minutes before it finishes (the report's own
        # wall_seconds times only the process that wrote it).
        assert job.started_at is not None
        job.started_at -= dt.timedelta(seconds=JOB_SECONDS)
        sub_id, job_id = sub.id, job.id
    document = json.loads((out_dir / "results.json").read_text())
    artifacts = upload_report(store, job_id, out_dir)
    with database.session_scope() as session:
        results.replace_job_results(
            session,
            job_id,
            results=result_rows_from_document(document),
            artifacts=artifacts,
            report=report_summary_from_document(document),
        )
        job_records.transition_job(session, job_id, "succeeded")
    return sub_id, job_id


def _synthetic(
    database: Database,
    team_id: int,
    protocol_id: int,
    name: str,
    visibility: str,
    eer: float,
    meand: float | None,
) -> int:
    with database.session_scope() as session:
        sub = submissions.create_submission(
            session,
            team_id,
            name,
            "container",
            visibility=visibility,
            container_image="ghcr.io/lab/anon",
            container_digest="sha256:" + "b" * 64,
        )
        rows = [
            results.ResultRow("semi-informed", "cosine", -1, "eer_percent", eer),
            results.ResultRow("ignorant", "cosine", -1, "eer_percent", eer - 10),
            results.ResultRow("semi-informed", "cosine", -1, "min_cllr_bits", 0.9),
            results.ResultRow("semi-informed", "plda", -1, "eer_percent", eer - 5),
        ]
        if meand is not None:
            rows.append(
                results.ResultRow("semi-informed", "cosine", -1, "srd_mean_disclosure_bits", meand)
            )
        job_id = record_finished_job(
            session,
            team_id=team_id,
            submission_id=sub.id,
            protocol_id=protocol_id,
            config={"name": name},
            rows=rows,
        )
        # Its report said the attacker was under-trained (the trust block's shape).
        record_report_summary(
            session,
            job_id,
            trustworthy=False,
            trust_reasons=[
                {
                    "code": "attacker_under_trained",
                    "message": UNDER_TRAINED,
                    "value": 71.0,
                    "threshold": 50.0,
                }
            ],
            det_curves={},
        )
        return sub.id


def _utility_submission(
    database: Database,
    team_id: int,
    protocol_id: int,
    name: str,
    eer: float,
    wer_increase: float,
    usable: bool,
) -> int:
    """A submission under the utility protocol: privacy plus the utility rows a report's
    ``utility`` block becomes (scenario ``utility``, back-end ``-``)."""
    with database.session_scope() as session:
        sub = submissions.create_submission(
            session,
            team_id,
            name,
            "container",
            visibility="public",
            container_image="ghcr.io/lab/anon",
            container_digest="sha256:" + "c" * 64,
        )
        rows = [
            results.ResultRow("semi-informed", "cosine", -1, "eer_percent", eer),
            results.ResultRow("utility", "-", -1, "wer_original_percent", 4.0),
            results.ResultRow("utility", "-", -1, "wer_anonymized_percent", 4.0 + wer_increase),
            results.ResultRow("utility", "-", -1, "wer_increase_percent", wer_increase),
            results.ResultRow("utility", "-", -1, "pitch_correlation", 0.8),
            results.ResultRow("utility", "-", -1, "gvd_db", -2.0),
            results.ResultRow("utility", "-", -1, "usable_speech", 1.0 if usable else 0.0),
        ]
        record_finished_job(
            session,
            team_id=team_id,
            submission_id=sub.id,
            protocol_id=protocol_id,
            config={"name": name},
            rows=rows,
        )
        return sub.id


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    import uvicorn

    from api.app import create_app
    from api.server import server_options
    from services.pipeline.config import parse_config
    from services.pipeline.evaluation import run_evaluation

    folder = tmp_path_factory.mktemp("site")
    out_dir = folder / "evaluation"
    run_evaluation(parse_config(copy.deepcopy(TINY)), out_dir)
    url = f"sqlite:///{folder / 'unmask.db'}"
    upgrade_database(url)
    database = Database(url)
    store = LocalBlobStore(folder / "blobs", signing_key=HMAC_KEY)
    protocol_config = {k: v for k, v in TINY.items() if k not in ("anonymizer", "name")}
    # The real run scored cosine only; the protocol also lists PLDA, which only the synthetic
    # submission has, so the back-end switch has somewhere to go.
    protocol_config["backends"] = ["cosine", "plda"]
    with database.session_scope() as session:
        lab = identity.create_team(session, "speech-lab")
        rival = identity.create_team(session, "rival-lab")
        protocol = protocols.create_protocol(
            session,
            "synthetic-tiny",
            description="A tiny synthetic protocol (browser tests).",
            body={"config": protocol_config, "leaderboard": {"metric": "eer_percent"}},
        )
        token = identity.issue_team_token(
            session, "rival-lab", hmac_key=HMAC_KEY, scopes=["read"]
        ).plaintext
        lab_id, rival_id, protocol_id = lab.id, rival.id, protocol.id
    real_sub, real_job = _record_report(database, store, lab_id, protocol_id, out_dir)
    other = _synthetic(database, lab_id, protocol_id, "voice-conversion v2", "public", 44.0, None)
    _synthetic(database, rival_id, protocol_id, "SECRET-rival-anonymizer", "private", 48.0, 0.01)
    with database.session_scope() as session:  # a protocol that measures utility
        utility_protocol = protocols.create_protocol(
            session,
            "synthetic-utility",
            description="Privacy among the useful submissions (browser tests).",
            body={
                "config": {**protocol_config, "utility": {"max_wer_increase_percent": 10}},
                "leaderboard": {"metric": "eer_percent"},
            },
        )
        utility_protocol_id = utility_protocol.id
    utility_subs = {
        name: _utility_submission(database, lab_id, utility_protocol_id, name, *values)
        for name, values in {
            "useful": (35.0, 3.0, True),
            "garbled": (45.0, 25.0, True),
            "silence": (50.0, 90.0, False),
            "more useful, less private": (20.0, 1.0, True),
        }.items()
    }
    with database.session_scope() as session:  # a job in progress, for the live job page
        job = job_records.create_job(
            session,
            team_id=lab_id,
            submission_id=other,
            protocol_id=protocol_id,
            config={"name": "live"},
            stage_names=["corpus", "anonymize", "train"],
        ).job
        job_records.transition_job(session, job.id, "running")
        job_records.transition_stage(session, job.stages[0].id, "succeeded")
        job_records.transition_stage(session, job.stages[1].id, "running", worker_host="gpu@host1")
        job_records.heartbeat_stage(
            session, job.stages[1].id, progress=0.25, log="anonymizing 1/4\n"
        )
        running_job = job.id
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        blob_dir=folder / "blobs",
        token_hmac_key=HMAC_KEY,
    )
    app = create_app(settings, database=database, blob_store=store, senders={})
    port = _free_port()
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
    yield Site(
        f"http://127.0.0.1:{port}",
        database,
        protocol_id,
        real_sub,
        real_job,
        other,
        "SECRET-rival-anonymizer",
        token,
        running_job,
        utility_protocol_id,
        utility_subs,
    )
    server.should_exit = True
    thread.join(timeout=10)
    database.dispose()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name in SCREENSHOTS:  # a stale file must not pass the screenshot check
        (ARTIFACTS / name).unlink(missing_ok=True)
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1360, "height": 900},
        )
        yield context
        context.close()


def _row_ids(page: Any) -> list[int]:
    return [
        int(x)
        for x in page.eval_on_selector_all(
            "#leaderboard tbody tr[data-submission]", "rows => rows.map(r => r.dataset.submission)"
        )
    ]


def test_leaderboard_sorts_hides_private_and_opens_a_submission_with_its_plots(
    site: Site, browser: Any
) -> None:
    page = browser.new_page()
    page.goto(f"{site.url}/")
    page.screenshot(path=str(ARTIFACTS / "pages-protocols.png"), full_page=True)
    page.click("text=synthetic-tiny")
    page.wait_for_selector("#leaderboard")
    assert site.private_name not in page.content()
    ids = _row_ids(page)
    assert set(ids) == {site.real_submission, site.other_submission}
    page.screenshot(path=str(ARTIFACTS / "pages-leaderboard.png"), full_page=True)
    # Sort by SRD MeanD: the submission without an SRD value stays last in both directions.
    page.click('th[data-column="srd_mean_disclosure_bits"] a')
    page.wait_for_url("**sort=srd_mean_disclosure_bits**")
    assert _row_ids(page)[-1] == site.other_submission
    assert (
        page.locator('th[data-column="srd_mean_disclosure_bits"]')
        .get_attribute("class")
        .endswith("active")
    )
    page.click('th[data-column="srd_mean_disclosure_bits"] a')
    page.wait_for_url("**order=desc**")
    assert _row_ids(page)[-1] == site.other_submission
    # Sort by name ascending: "pitch (built-in)" < "voice-conversion v2".
    page.click('th[data-column="name"] a')
    page.wait_for_url("**sort=name**")
    assert _row_ids(page) == [site.real_submission, site.other_submission]
    page.click(f'tr[data-submission="{site.real_submission}"] td.name a')
    page.wait_for_selector("#results-summary")
    images = page.locator("img[data-plot]")
    names = images.evaluate_all("imgs => imgs.map(i => i.dataset.plot)")
    assert any(n.startswith("det-") for n in names)
    assert any(n.startswith("ranks-") for n in names)
    assert any(n.startswith("training-") for n in names)
    widths = page.evaluate(
        """async () => {
            const imgs = [...document.querySelectorAll('img[data-plot]')];
            for (const img of imgs) { img.loading = 'eager'; img.scrollIntoView(); }
            await Promise.all(imgs.map(img => img.decode().catch(() => null)));
            return imgs.map(img => img.naturalWidth);
        }"""
    )
    assert widths and all(w > 0 for w in widths), widths
    text = page.inner_text("body")
    assert "Provenance" in text and "torch" in text and "Artifacts" in text
    assert "results.json" in text
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "pages-submission.png"), full_page=True)
    page.close()


def test_job_page_follows_live_progress(site: Site, browser: Any) -> None:
    page = browser.new_page()
    page.goto(f"{site.url}/jobs/{site.running_job}")
    row = page.locator('tr[data-stage="anonymize"]')
    assert row.locator('[data-field="pct"]').inner_text() == "25%"
    assert "anonymizing 1/4" in page.inner_text("#logs")
    with site.database.session_scope() as session:
        stage = job_records.get_stage(session, site.running_job, "anonymize")
        job_records.heartbeat_stage(session, stage.id, progress=0.75, log="anonymizing 3/4\n")
    page.wait_for_function(
        """() => document.querySelector('tr[data-stage="anonymize"] [data-field="pct"]')
                 .textContent === '75%'""",
        timeout=10_000,
    )
    assert "anonymizing 3/4" in page.inner_text("#logs")
    page.screenshot(path=str(ARTIFACTS / "pages-job-running.png"), full_page=True)
    with site.database.session_scope() as session:
        stage = job_records.get_stage(session, site.running_job, "anonymize")
        job_records.transition_stage(session, stage.id, "failed", error="out of memory (test)")
        job_records.transition_job(
            session, site.running_job, "failed", error_message="stage anonymize failed"
        )
    page.wait_for_function(
        "() => document.getElementById('job-state').textContent === 'failed'", timeout=10_000
    )
    assert "out of memory (test)" in page.inner_text("#logs")
    page.close()


def test_private_submission_only_for_its_team_after_login(site: Site, browser: Any) -> None:
    page = browser.new_page()
    leaderboard = f"{site.url}/protocols/{site.protocol_id}"
    page.goto(leaderboard)
    assert site.private_name not in page.content()
    page.click("text=Sign in")
    page.fill("#token", site.private_token)
    page.click("button[type=submit]")
    page.wait_for_url(leaderboard)
    assert site.private_name in page.content()
    assert "rival-lab" in page.inner_text("header")
    cookies = {c["name"]: c for c in browser.cookies()}
    assert cookies["unmask_session"]["httpOnly"] is True
    assert page.evaluate("document.cookie").find("unmask_session") == -1  # not readable by JS
    page.screenshot(path=str(ARTIFACTS / "pages-leaderboard-signed-in.png"), full_page=True)
    page.click("text=Sign out")
    page.goto(leaderboard)
    assert site.private_name not in page.content()
    page.close()


def _decoded_widths(page: Any, selector: str) -> list[int]:
    return list(
        page.evaluate(
            """async (selector) => {
                const imgs = [...document.querySelectorAll(selector)];
                for (const img of imgs) { img.loading = 'eager'; img.scrollIntoView(); }
                await Promise.all(imgs.map(img => img.decode().catch(() => null)));
                return imgs.map(img => img.naturalWidth);
            }""",
            selector,
        )
    )


def test_leaderboard_verdict_elements(site: Site, browser: Any) -> None:
    page = browser.new_page()
    leaderboard = f"{site.url}/protocols/{site.protocol_id}"
    page.goto(leaderboard)
    page.wait_for_selector("#leaderboard")
    # The original-speech reference row, above the ranked rows.
    reference = page.locator("#reference-row")
    assert "Original speech" in reference.inner_text()
    eer_cell = reference.locator("td.num").nth(1).inner_text()  # after the empty rank cell
    assert float(eer_cell.split()[0]) >= 0.0, eer_cell
    # Lazy-informed and per-gender EER columns, seeds, trust.
    for column in ("eer_percent.ignorant", "eer_per_gender_percent_f", "seeds", "trust"):
        assert page.locator(f'th[data-column="{column}"]').count() == 1, column
    # The tiny protocol does not run the lazy-informed attacker: its column is left out
    # (tests/unit/test_pages_verdict.py shows it where the results have it).
    assert page.locator('th[data-column="eer_percent.lazy-informed"]').count() == 0
    real = page.locator(f'tr[data-submission="{site.real_submission}"]')
    other = page.locator(f'tr[data-submission="{site.other_submission}"]')
    assert real.locator(".std").count() == 0  # one training seed: no spread to show
    assert real.locator(".ci").count() >= 1  # the EER's interval
    # The pipeline's report carries its trust check (passed or not, never unknown).
    assert real.locator(".trust.unknown").count() == 0
    assert real.locator(".trust.ok, .trust.warn").count() == 1
    # The trust cell: a mark and one short line; every reason in the tooltip and on the
    # submission page, which the mark links to.
    warn = other.locator(".trust.warn")
    assert warn.inner_text() == "⚠ attacker under-trained", warn.inner_text()
    assert UNDER_TRAINED in (warn.get_attribute("title") or "")
    assert (warn.get_attribute("href") or "").endswith("#trust")
    # Rows of a reasonable height (the real report has several trust reasons).
    heights = page.eval_on_selector_all(
        "#leaderboard tbody tr[data-submission]", "rows => rows.map(r => r.offsetHeight)"
    )
    assert heights and max(heights) <= 160, heights
    # Metric headers wrap at spaces only: "Top-1 link %" on at most two lines.
    lines = page.evaluate(
        """() => document.querySelector('th[data-column="linkability_top1_percent"] a')
                 .getClientRects().length"""
    )
    assert 1 <= lines <= 2, lines
    # Description and links (anchors, not text).
    assert "semitones" in real.locator(".description").inner_text()
    assert real.locator("a.ext.paper").get_attribute("href") == "https://arxiv.org/abs/2401.00001"
    # The overlaid DET plot decodes.
    widths = _decoded_widths(page, "#det-overlay")
    assert len(widths) == 1 and widths[0] > 300, widths
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "pages-leaderboard.png"), full_page=True)
    # CSV export of what the page shows.
    href = page.locator("#csv-export").get_attribute("href")
    response = page.request.get(f"{site.url}{href}")
    assert response.status == 200 and response.headers["content-type"].startswith("text/csv")
    assert "pitch (built-in)" in response.text() and site.private_name not in response.text()
    # The back-end switch: PLDA shows the synthetic submission's PLDA value.
    page.click('#backend-switch a[data-backend="plda"]')
    page.wait_for_url("**backend=plda**")
    assert page.locator('#backend-switch strong[data-backend="plda"]').count() == 1
    assert "39.0" in page.locator(f'tr[data-submission="{site.other_submission}"]').inner_text()
    page.screenshot(path=str(ARTIFACTS / "pages-leaderboard-plda.png"), full_page=True)
    # Metric definitions are links to anchors the app serves.
    page.goto(leaderboard)
    page.click('th[data-column="eer_percent"] a.def')
    page.wait_for_url("**/metrics#eer_percent")
    assert page.locator("dt#eer_percent").is_visible()
    assert page.locator("dt#trust").count() == 1
    page.screenshot(path=str(ARTIFACTS / "pages-metrics.png"), full_page=True)
    page.close()


def test_leaderboard_ranks_privacy_among_useful_submissions_with_a_scatter(
    site: Site, browser: Any
) -> None:
    subs = site.utility_submissions or {}
    page = browser.new_page()
    page.goto(f"{site.url}/protocols/{site.utility_protocol_id}")
    page.wait_for_selector("#leaderboard")
    rule = page.inner_text("#ranking-rule")
    assert "at most 10 points" in rule and "unusable speech" in rule, rule
    # Usable and within the bound first (by EER), then above the bound, then unusable speech,
    # although silence has the highest EER of all.
    order = [subs[n] for n in ("useful", "more useful, less private", "garbled", "silence")]
    assert _row_ids(page) == order
    assert page.locator(f'tr[data-submission="{subs["garbled"]}"] .tier').count() == 1
    assert (
        page.locator(f'tr[data-submission="{subs["silence"]}"]').get_attribute("data-tier") == "3"
    )
    assert page.locator(f'tr[data-submission="{subs["useful"]}"] .tier').count() == 0
    # Utility columns next to privacy.
    for column in ("wer_increase_percent.utility", "pitch_correlation.utility", "gvd_db.utility"):
        assert page.locator(f'th[data-column="{column}"]').count() == 1, column
    # The privacy-utility scatter with its Pareto front decodes.
    widths = _decoded_widths(page, "#utility-scatter")
    assert len(widths) == 1 and widths[0] > 300, widths
    svg = page.request.get(f"{site.url}/protocols/{site.utility_protocol_id}/utility.svg")
    assert svg.status == 200 and "Pareto front" in svg.text()
    page.screenshot(path=str(ARTIFACTS / "pages-leaderboard-utility.png"), full_page=True)
    # A protocol without utility has no scatter.
    page.goto(f"{site.url}/protocols/{site.protocol_id}")
    assert page.locator("#utility-scatter").count() == 0
    page.close()


def test_submission_page_explains_sections_and_marks_trust(site: Site, browser: Any) -> None:
    page = browser.new_page()
    page.goto(f"{site.url}/submissions/{site.real_submission}")
    page.wait_for_selector("#results-summary")
    assert page.locator(".section-note").count() >= 5  # each section says what it means
    trust = page.inner_text("#trust")  # the pipeline's report carries its trust check
    assert "Not checked" not in trust and ("passed" in trust or "⚠" in trust), trust
    links = page.locator("#submission-links a")
    assert links.count() == 2
    # A one-line verdict, as the CLI prints it.
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("Verdict: EER ") and "semi-informed attacker (cosine)" in verdict
    assert "on original speech" in verdict and "Attacker " in verdict, verdict
    # Scenarios in the evaluation's order (its config), not alphabetical.
    for table in ("#results-summary", "#results-per-seed"):
        order = page.eval_on_selector_all(
            f"{table} tbody tr", "rows => rows.map(r => r.dataset.scenario)"
        )
        assert list(dict.fromkeys(order)) == TINY["scenarios"], (table, order)
    # The per-seed table shows SRD, IdR and the trial counts the aggregate has.
    seed_row = page.locator('#results-per-seed tr[data-scenario="semi-informed"]')
    cells = seed_row.locator("td").all_inner_texts()
    headers = page.locator("#results-per-seed thead th").all_inner_texts()
    for header in ("SRD MeanD (bits)", "IdR %"):
        assert cells[headers.index(header)] not in ("—", ""), (header, cells)
    targets, nontargets = (int(x) for x in seed_row.locator("td.trials").inner_text().split(" / "))
    assert targets > 0 and nontargets > 0
    # Cllr (it does not apply to these scores) is no column of dashes: a note says where it does.
    summary_headers = page.locator("#results-summary thead th").all_inner_texts()
    assert "Cllr" not in summary_headers and "min Cllr" in summary_headers
    assert "Cllr applies to log-likelihood-ratio scores only" in page.inner_text("#not-applicable")
    # The job's wall time, not the report process's.
    assert page.inner_text("#wall-time").startswith("4 min"), page.inner_text("#wall-time")
    # Legal-metric plots one per row, shown at a legible size.
    legal = page.locator('img[data-plot^="legal-"]')
    assert legal.count() >= 1
    legal.first.scroll_into_view_if_needed()
    box = legal.first.bounding_box()
    assert box is not None and box["width"] >= 900, box
    page.close()


def test_screenshots_are_written() -> None:
    """Runs after the page tests (file order): every screenshot exists and is a PNG."""
    for name in SCREENSHOTS:
        path = ARTIFACTS / name
        assert path.is_file(), path
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name
