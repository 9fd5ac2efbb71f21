"""The leaderboard's verdict elements on SQLite: original-speech reference, lazy-informed and
per-gender EER, seeds and std, intervals, back-end switch, CSV export, trust mark (report with and
without a ``trust`` block), descriptions and links, metric definitions, the overlaid DET plot;
the submission page's trust box; the submission fields over the API."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import norm

from services.metrics import catalogue
from services.pipeline.report import summarize_rows
from services.platform import identity, protocols, results, submissions
from services.platform.jobs import records as job_records
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.migrate import upgrade_database

HMAC_KEY = "verdict-test-key"
SCENARIOS = ["original", "ignorant", "lazy-informed", "semi-informed"]
PROTOCOL_BODY = {
    "config": {"scenarios": SCENARIOS, "backends": ["cosine", "plda"]},
    "leaderboard": {"metric": "eer_percent"},
}
UNDER_TRAINED = "attacker under-trained: VER_S 62.0 % above 50.0 %"


def _det(eer: float) -> dict[str, list[float]]:
    """A DET curve through (eer, eer): pmiss = Phi(2 Phi^-1(eer) - Phi^-1(pfa))."""
    pfa = np.linspace(0.001, 0.999, 50)
    at = norm.ppf(eer / 100)
    return {"pfa": pfa.tolist(), "pmiss": norm.cdf(2 * at - norm.ppf(pfa)).tolist()}


def _document(base_eer: float, *, trust: dict[str, Any] | None) -> dict[str, Any]:
    rows = []
    for scenario in SCENARIOS:
        for backend, shift in (("cosine", 0.0), ("plda", -2.0)):
            for seed, jitter in ((0, -1.0), (1, 1.0)):
                eer = 4.0 if scenario == "original" else base_eer + shift + jitter
                rows.append(
                    {
                        "scenario": scenario,
                        "backend": backend,
                        "seed": seed,
                        "eer_percent": eer,
                        "eer_per_gender_percent": {"f": eer - 1.5, "m": eer + 1.5},
                        "eer_ci95_percent": [eer - 3.0, eer + 3.0],
                        "min_cllr_bits": 0.5,
                        "linkability": 0.25,
                        "legal": {
                            "headline": {
                                catalogue.LINKABILITY_TOP1.key: 100.0 - eer,
                                catalogue.SINGLING_OUT.key: 90.0 - eer,
                                catalogue.LINKABILITY_TOP1_CHANCE.key: 6.25,
                                catalogue.SINGLING_OUT_CHANCE.key: 37.98,
                            }
                        },
                        "det": _det(eer),
                    }
                )
    document: dict[str, Any] = {"rows": rows, "summary": summarize_rows(rows)}
    if trust is not None:
        document["trust"] = trust
    return document


class World:
    """A protocol with two evaluated public submissions: one whose report says its attacker was
    under-trained (with description and links), one whose report has no trust block."""

    def __init__(self, database: Database) -> None:
        self.database = database
        with database.session_scope() as session:
            team = identity.create_team(session, "lab")
            self.protocol_id = protocols.create_protocol(
                session, "synthetic", body=PROTOCOL_BODY
            ).id
            self.submit_token = identity.issue_team_token(
                session, "lab", hmac_key=HMAC_KEY, scopes=["submit", "read"]
            ).plaintext
            team_id = team.id
        weak_trust = {
            "trustworthy": False,
            "reasons": [
                {"code": "attacker_under_trained", "message": UNDER_TRAINED,
                 "value": 62.0, "threshold": 50.0},
                "not an object",  # skipped
            ],
        }  # fmt: skip
        self.described = self._evaluated(
            team_id,
            "=formula anon",
            _document(40.0, trust=weak_trust),
            description="Pitch shift by four semitones, then a vocoder.",
            paper_url="https://arxiv.org/abs/2401.00001",
            code_url="https://github.com/lab/anon",
        )
        self.plain = self._evaluated(team_id, "plain anon", _document(30.0, trust=None))

    def _evaluated(self, team_id: int, name: str, document: dict[str, Any], **info: Any) -> int:
        with self.database.session_scope() as session:
            sub = submissions.create_submission(
                session, team_id, name, "builtin", visibility="public", builtin_name="pitch",
                **info,
            )  # fmt: skip
            job = job_records.create_job(
                session, team_id=team_id, submission_id=sub.id, protocol_id=self.protocol_id,
                config={}, stage_names=[],
            ).job  # fmt: skip
            job_records.transition_job(session, job.id, "running")
            results.replace_job_results(
                session,
                job.id,
                results=results.result_rows_from_document(document),
                report=results.report_summary_from_document(document),
            )
            job_records.transition_job(session, job.id, "succeeded")
            return sub.id


@pytest.fixture
def world_client(tmp_path: Path) -> Iterator[tuple[World, Any]]:
    from fastapi.testclient import TestClient

    from api.app import create_app

    url = f"sqlite:///{tmp_path / 'verdict.db'}"
    upgrade_database(url)
    database = Database(url)
    store = LocalBlobStore(tmp_path / "blobs", signing_key=HMAC_KEY)
    world = World(database)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        blob_dir=tmp_path / "blobs",
        token_hmac_key=HMAC_KEY,
    )
    with TestClient(create_app(settings, database=database, blob_store=store)) as client:
        yield world, client
    database.dispose()


def _rows(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr data-submission="(\d+)"', html)]


def _row(html: str, submission_id: int) -> str:
    match = re.search(rf'<tr data-submission="{submission_id}".*?</tr>', html, re.S)
    assert match is not None
    return match.group(0)


def test_leaderboard_shows_reference_spread_gender_lazy_and_trust(
    world_client: tuple[World, Any],
) -> None:
    world, client = world_client
    page = client.get(f"/protocols/{world.protocol_id}").text
    assert _rows(page) == [world.described, world.plain]  # EER 40 before 30 (cosine)
    described = _row(page, world.described)
    # mean ± std over seeds (39, 41) and the interval of the means' bounds
    assert '40.0<span class="std"> ± 1.4</span>' in described
    assert "[37.0, 43.0]" in described
    assert ">38.5<" in described and ">41.5<" in described  # per-gender EER (f, m)
    for key in ("eer_percent.lazy-informed", "eer_per_gender_percent_f", "seeds", "trust"):
        assert f'data-column="{key}"' in page
    assert "⚠" in described and UNDER_TRAINED in described  # the trust mark with its reason
    assert 'class="trust unknown"' in _row(page, world.plain)  # no trust block: unknown
    # the description and http(s) links; the reference row with the original-speech EER
    assert "Pitch shift by four semitones" in described
    assert 'href="https://arxiv.org/abs/2401.00001"' in described
    reference = re.search(r'<tr class="reference".*?</tr>', page, re.S)
    assert reference is not None and "Original speech" in reference.group(0)
    assert ">4.0<" in reference.group(0)


def test_definitions_are_links_to_anchors_the_app_serves(world_client: tuple[World, Any]) -> None:
    world, client = world_client
    page = client.get(f"/protocols/{world.protocol_id}").text
    anchors = set(re.findall(r'href="/metrics#([\w.-]+)"', page))
    assert {catalogue.EER.key, "trust", "seeds"} <= anchors
    definitions = client.get("/metrics")
    assert definitions.status_code == 200
    for anchor in anchors:
        assert f'id="{anchor}"' in definitions.text, anchor


def test_backend_switch_and_csv_export_follow_the_same_filters(
    world_client: tuple[World, Any],
) -> None:
    world, client = world_client
    page = client.get(f"/protocols/{world.protocol_id}?backend=plda").text
    assert 'data-backend="cosine"' in page and "38.0<span" in _row(page, world.described)
    assert f'href="/protocols/{world.protocol_id}/leaderboard.csv?backend=plda"' in page
    unknown = client.get(f"/protocols/{world.protocol_id}?backend=nonsense")
    assert unknown.status_code == 422 and "nonsense" in unknown.text

    response = client.get(
        f"/protocols/{world.protocol_id}/leaderboard.csv?backend=plda&sort=name&order=desc"
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(response.text)))
    assert [r["submission"] for r in table] == ["plain anon", "'=formula anon"]  # name desc
    described = table[1]
    assert described["backend"] == "plda" and described["rank"] == "1"
    assert float(described["EER %"]) == 38.0 and float(described["EER % std"]) > 1.0
    assert described["trustworthy"] == "no" and described["trust reasons"] == (
        "attacker_under_trained"
    )
    assert table[0]["trustworthy"] == "unknown"
    assert described["paper_url"] == "https://arxiv.org/abs/2401.00001"
    # The legal metrics' leaderboard columns (plda, semi-informed: EER 38 -> 62 % and 52 %).
    assert float(described["Top-1 link %"]) == 62.0 and float(described["Singling out %"]) == 52.0
    assert "Top-1 link %" in page and "Singling out %" in page


def test_overlaid_det_plot_is_a_png_of_the_top_submissions(
    world_client: tuple[World, Any],
) -> None:
    world, client = world_client
    page = client.get(f"/protocols/{world.protocol_id}").text
    match = re.search(r'id="det-overlay" src="([^"]+)"', page)
    assert match is not None
    image = client.get(match.group(1).replace("&amp;", "&"))
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content[:8] == b"\x89PNG\r\n\x1a\n" and len(image.content) > 5000
    svg = client.get(f"/protocols/{world.protocol_id}/det.svg?backend=plda")
    assert svg.status_code == 200 and b"plain anon" in svg.content  # the legend names them


def _attach_document(world: World, store: LocalBlobStore, submission_id: int,
                     document: dict[str, Any]) -> None:  # fmt: skip
    """Store ``document`` as the job's results.json artifact (what the report phase uploads)."""
    with world.database.session_scope() as session:
        job_id = job_records.list_jobs(session, submission_id=submission_id).items[0].id
        info = store.put_bytes(
            f"jobs/{job_id}/results.json", json.dumps(document).encode(),
            media_type="application/json",
        )  # fmt: skip
        results.record_results_and_artifacts(
            session, job_id,
            artifacts=[results.ArtifactRecord(info.key, info.size_bytes, info.sha256,
                                              "application/json")],
        )  # fmt: skip


def test_submission_page_marks_the_under_trained_attacker(
    world_client: tuple[World, Any], tmp_path: Path
) -> None:
    world, client = world_client
    store = LocalBlobStore(tmp_path / "blobs", signing_key=HMAC_KEY)
    weak = {"trustworthy": False, "reasons": [{"code": "attacker_under_trained",
            "message": UNDER_TRAINED, "value": 62.0, "threshold": 50.0}]}  # fmt: skip
    _attach_document(world, store, world.described, _document(40.0, trust=weak))
    _attach_document(world, store, world.plain, _document(30.0, trust=None))
    page = client.get(f"/submissions/{world.described}").text
    assert 'id="submission-description"' in page and 'id="submission-links"' in page
    box = re.search(r'<section class="trust-box warn" id="trust">.*?</section>', page, re.S)
    assert box is not None and UNDER_TRAINED in box.group(0) and "threshold 50.00" in box.group(0)
    assert page.count('class="muted section-note"') >= 4  # every section says what it means
    plain = client.get(f"/submissions/{world.plain}").text
    assert 'class="trust-box unknown"' in plain and "Not checked" in plain
    assert UNDER_TRAINED not in plain


def test_report_summary_reads_trust_defensively() -> None:
    assert results.read_trust({}) == (None, [])
    assert results.read_trust({"trust": {"trustworthy": "yes"}}) == (None, [])
    ok, reasons = results.read_trust(
        {"trust": {"trustworthy": False, "reasons": [{"code": "x", "value": "nan?"}]}}
    )
    assert ok is False and reasons == [
        {"code": "x", "message": "x", "value": None, "threshold": None}
    ]
    summary = results.report_summary_from_document(_document(30.0, trust=None))
    assert summary.trustworthy is None
    curve = summary.det_curves["semi-informed|cosine"]
    assert curve["seed"] == 0 and curve["eer"] == 29.0 and len(curve["pfa"]) == 50


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("paper_url", "javascript:alert(1)", "http"),
        ("code_url", "//evil.example/x", "http"),
        ("paper_url", "https://a.org/\x00", "NUL"),
        ("description", "x" * 2001, "2000"),
        ("description", "bad\x00text", "NUL"),
    ],
)
def test_submission_fields_are_checked_with_a_422_naming_the_field(
    world_client: tuple[World, Any], field: str, value: str, problem: str
) -> None:
    world, client = world_client
    body = {"kind": "builtin", "name": "linked", "builtin": {"name": "pitch"}, field: value}
    response = client.post(
        "/v1/submissions", json=body, headers={"Authorization": f"Bearer {world.submit_token}"}
    )
    assert response.status_code == 422, response.text
    assert field in response.text and problem in response.text


def test_submission_fields_round_trip_over_the_api(world_client: tuple[World, Any]) -> None:
    world, client = world_client
    body = {
        "kind": "builtin",
        "name": "linked",
        "builtin": {"name": "pitch"},
        "description": "  A short description.  ",
        "paper_url": "https://arxiv.org/abs/2401.00002",
        "code_url": "http://example.org/code",
    }
    response = client.post(
        "/v1/submissions", json=body, headers={"Authorization": f"Bearer {world.submit_token}"}
    )
    assert response.status_code == 201, response.text
    out = response.json()
    assert out["description"] == "A short description."
    assert out["paper_url"] == body["paper_url"] and out["code_url"] == body["code_url"]


def test_a_zoo_job_stands_with_its_worst_case_on_the_leaderboard_pages_and_api(
    world_client: tuple[World, Any], tmp_path: Path
) -> None:
    from services.pipeline.zoo import worst_case
    from services.storage.models import Job, Submission

    world, client = world_client
    base = _document(30.0, trust=None)["rows"]
    rows = [{**r, "attacker": "baseline"} for r in base] + [
        {**r, "attacker": "augmented", "eer_percent": r["eer_percent"] - 10.0} for r in base
    ]
    worst = worst_case(rows)
    document = {
        "rows": rows,
        "summary": summarize_rows(rows),
        "worst_case": worst,
        "trust": {"trustworthy": True, "reasons": [], "attacker": "augmented",
                  "other_attackers": {"baseline": []}},
    }  # fmt: skip
    with world.database.session_scope() as session:
        team_id = session.get(Submission, world.plain).team_id  # type: ignore[union-attr]
    zoo = world._evaluated(team_id, "zoo anon", document)
    with world.database.session_scope() as session:
        job_id = session.query(Job.id).filter(Job.submission_id == zoo).scalar()
    page = client.get(f"/protocols/{world.protocol_id}").text
    row = _row(page, zoo)
    # The worst case: augmented's cosine EER (mean of 19 and 21), not the baseline's 30 or a mix.
    assert '20.0<span class="std"> ± 1.4</span>' in row
    assert "worst case: augmented" in row and f"?job={job_id}#attackers" in row
    assert "worst case" not in _row(page, world.plain)  # one attacker: no badge
    store = LocalBlobStore(tmp_path / "blobs", signing_key=HMAC_KEY)
    _attach_document(world, store, zoo, document)
    submission_page = client.get(f"/submissions/{zoo}?job={job_id}").text
    section = re.search(r'<section id="attackers">.*?</section>', submission_page, re.S)
    assert section is not None
    assert '<td class="attacker">augmented</td>' in section.group(0)
    assert "augmented / cosine" in submission_page and "baseline / plda" in submission_page
    answer = client.get(
        f"/v1/jobs/{job_id}/results", headers={"Authorization": f"Bearer {world.submit_token}"}
    )
    assert answer.status_code == 200, answer.text
    out = answer.json()
    eers = {
        (r["attacker"], r["backend"], r["seed"]): r["value"]
        for r in out["results"]
        if r["metric"] == "eer_percent" and r["scenario"] == "semi-informed"
    }
    assert eers[("augmented", "plda", -1)] == pytest.approx(18.0)
    assert eers[("baseline", "plda", -1)] == pytest.approx(28.0)
    semi = out["worst_case"]["semi-informed"]
    assert (semi["attacker"], semi["backend"]) == ("augmented", "plda")
    assert semi["eer_percent"] == pytest.approx(18.0)
    assert out["trust"]["attacker"] == "augmented"
    plain_job = client.get(
        f"/v1/jobs/{job_id - 1}/results", headers={"Authorization": f"Bearer {world.submit_token}"}
    ).json()
    assert plain_job["worst_case"] is None
    assert {r["attacker"] for r in plain_job["results"]} == {"baseline"}


def test_cllr_is_stored_and_shown_only_where_it_applies(
    world_client: tuple[World, Any], tmp_path: Path
) -> None:
    """A report whose PLDA rows carry Cllr and whose cosine rows leave it out (it does not apply
    to cosine scores): the results hold Cllr at every seed and in the aggregate of the PLDA rows
    and nowhere for cosine; the submission page shows the PLDA values and blank (not dashed)
    cosine cells, with the catalogue's note on where Cllr applies."""
    from sqlalchemy import select

    from services.storage.models import Result

    world, client = world_client
    document = _document(35.0, trust=None)
    for row in document["rows"]:
        if catalogue.CLLR.applies(row["backend"]):
            row[catalogue.CLLR.key] = 0.75
    document["summary"] = summarize_rows(document["rows"])
    with world.database.session_scope() as session:
        team_id = identity.create_team(session, "calibrated").id
    sub_id = world._evaluated(team_id, "calibrated anon", document)
    _attach_document(world, LocalBlobStore(tmp_path / "blobs", signing_key=HMAC_KEY), sub_id,
                     document)  # fmt: skip
    with world.database.session_scope() as session:
        stored = session.scalars(
            select(Result).where(
                Result.metric == catalogue.CLLR.key, Result.submission_id == sub_id
            )
        ).all()
        seeds = {(r.backend, r.seed) for r in stored}
        assert all(r.value == 0.75 for r in stored)
    assert seeds == {("plda", s) for s in (0, 1, catalogue.AGGREGATE_SEED)}
    page = client.get(f"/submissions/{sub_id}").text
    summary = re.search(r'<table class="results" id="results-summary">.*?</table>', page, re.S)
    assert summary is not None
    assert f'data-column="{catalogue.CLLR.key}"' in summary.group(0)
    for row in re.findall(r'<tr data-scenario="semi-informed">.*?</tr>', summary.group(0), re.S):
        cells = re.findall(r"<td[^>]*>.*?</td>", row, re.S)
        backend = re.sub(r"<[^>]+>", "", cells[1])
        # scenario, back-end, EER, then the metric columns in the header's order
        cllr = cells[3 + _aggregate_column_keys(page).index(catalogue.CLLR.key)]
        if backend == "plda":
            assert "0.750" in cllr
        else:
            assert 'class="num not-applicable"' in cllr and "—" not in cllr
    note = re.search(r'<p class="muted" id="not-applicable">(.*?)</p>', page, re.S)
    assert note is not None and catalogue.CLLR.applies_note in note.group(1)
    assert "Cllr" not in (re.search(r'id="not-measured">(.*?)</p>', page, re.S) or [""])[0]


def _aggregate_column_keys(page: str) -> list[str]:
    """The aggregate table's metric columns after the EER, as the page names them."""
    head = re.search(r'id="results-summary">\s*<thead>(.*?)</thead>', page, re.S)
    assert head is not None
    return re.findall(r'data-column="([^"]+)"', head.group(1))


def test_the_results_api_carries_the_challenger_and_the_demo_verdict_prints_it(
    world_client: tuple[World, Any],
) -> None:
    from rich.console import Console

    from cli.demo_platform import print_job_verdict
    from cli.verdict import verdict_lines
    from services.storage.models import Job, Submission

    world, client = world_client
    eer = catalogue.EER.key
    lazy_row = {"attacker": "ge2e", "backend": "cosine", eer: 23.4, "pretrained": True}
    challenger = {
        "attacker": "ge2e",
        "family": "pretrained GE2E verifier (Resemblyzer), not trained on this corpus",
        "scenario": "semi-informed",
        "backend": "cosine",
        eer: 27.2,
        "headline": {"attacker": "baseline", "backend": "plda", eer: 26.0, "n_seeds": 2},
        "difference_points": 1.2,
        "interval_points": [-2.0, 4.5],
        "confidence": 0.95,
        "n_speakers": 16,
        "stronger": False,
        "cpu_seconds": 12.5,
        "compute_seconds": 14.0,
        "scenarios": {
            "lazy-informed": {
                eer: 23.4,
                "headline": {"attacker": "baseline", "backend": "plda", eer: 28.0},
                "difference_points": -4.6,
                "interval_points": [-7.0, -2.1],
                "stronger": True,
                "row": lazy_row,
            },
        },
    }
    document = _document(30.0, trust={"trustworthy": True, "reasons": []})
    document["challenger"] = challenger
    document["trust"]["challenger"] = challenger
    with world.database.session_scope() as session:
        team_id = session.get(Submission, world.plain).team_id  # type: ignore[union-attr]
    sub = world._evaluated(team_id, "challenged anon", document)
    with world.database.session_scope() as session:
        job_id = session.query(Job.id).filter(Job.submission_id == sub).scalar()
    auth = {"Authorization": f"Bearer {world.submit_token}"}
    out = client.get(f"/v1/jobs/{job_id}/results", headers=auth).json()
    block = out["trust"]["challenger"]
    assert block["attacker"] == "ge2e" and block[eer] == pytest.approx(27.2)
    assert block["interval_points"] == [-2.0, 4.5] and block["n_speakers"] == 16
    assert block["headline"]["attacker"] == "baseline" and block["stronger"] is False
    row = block["scenarios"]["lazy-informed"]["row"]
    assert {k: row[k] for k in lazy_row} == lazy_row
    # `unmask demo` prints the API's answer with the verdict block `unmask evaluate` prints.
    console = Console(record=True, width=300)
    print_job_verdict(console, out, "http://127.0.0.1:1", job_id)
    text = console.export_text()
    assert [line.rstrip() for line in text.splitlines()] == verdict_lines(
        out["results"],
        out["trust"],
        where=f"http://127.0.0.1:1/v1/jobs/{job_id}/results (API), "
        f"artifacts at http://127.0.0.1:1/v1/jobs/{job_id}/artifacts",
    )
    assert "  challenger: EER 27.2 % by ge2e (pretrained, not trained here)" in text
    assert "(difference +1.2 points, 95 % interval -2.0 to +4.5)" in text
    assert "  lazy-informed: EER 23.4 % by ge2e (pretrained), below the trained attacker's" in text
    # A job whose report has no challenger block answers null.
    plain = client.get(f"/v1/jobs/{job_id - 1}/results", headers=auth).json()
    assert plain["trust"]["challenger"] is None
