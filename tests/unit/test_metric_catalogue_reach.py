"""The metric catalogue is the one place metric keys are spelled, and what it lists reaches every
surface: a dummy metric added to it alone shows on the leaderboard page, in the webhook payload
and in the CLI tables."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cli.result_table import rows_table, summary_table
from services.metrics import catalogue
from services.pipeline.report import summarize_rows
from services.platform import identity, protocols, submissions
from services.platform.results import result_rows_from_document
from services.platform.webhooks import create_webhook_endpoint
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from services.storage.models import WebhookDelivery
from support.metrics import dummy_metric
from support.seeding import record_finished_job

ROOT = Path(__file__).resolve().parents[2]
CODE_FOLDERS = ("services", "api", "cli", "workers")
HMAC_KEY = "catalogue-test-key"


def test_metric_keys_are_string_literals_only_in_the_catalogue() -> None:
    keys = [m.key for m in catalogue.all_metrics()]
    pattern = re.compile(r"([\"'])(" + "|".join(re.escape(k) for k in keys) + r")\1")
    offenders = []
    for folder in CODE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "services" / "metrics" / "catalogue.py":
                continue
            if (ROOT / "cli" / "api_client") in path.parents:
                continue  # generated from the OpenAPI document (scripts/generate_client.py)
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                if pattern.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "metric keys spelled outside the catalogue:\n" + "\n".join(offenders)


DUMMY = dummy_metric(
    label="Dummy score", description="A metric that exists only in this test.", path=("dummy",)
)


def _document() -> dict[str, Any]:
    """A report document whose rows carry the dummy metric at its path (as a metric module
    would write it), summarized by the report's own code."""
    rows = [
        {"scenario": "semi-informed", "backend": "cosine", "seed": seed, "eer_percent": eer,
         "dummy": dummy}
        for seed, eer, dummy in ((0, 30.0, 0.25), (1, 34.0, 0.75))
    ]  # fmt: skip
    return {
        "name": "reach",
        "anonymizer": {"name": "pitch"},
        "protocol": {"name": "synthetic"},
        "rows": rows,
        "summary": summarize_rows(rows),
    }


def _rendered(table: Any) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(table)
    return str(console.file.getvalue())  # type: ignore[attr-defined]


def test_a_metric_added_to_the_catalogue_reaches_every_surface(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app

    monkeypatch.setattr(catalogue, "METRICS", (*catalogue.METRICS, DUMMY))
    document = _document()
    rows = result_rows_from_document(document)
    aggregated = {(r.scenario, r.seed, r.metric): r.value for r in rows}
    assert aggregated[("semi-informed", -1, "dummy_score")] == pytest.approx(0.5)

    url = f"sqlite:///{tmp_path / 'reach.db'}"
    upgrade_database(url)
    database = Database(url)
    with database.session_scope() as session:
        team = identity.create_team(session, "lab")
        protocol_id = protocols.create_protocol(
            session,
            "synthetic",
            body={"config": {"scenarios": ["semi-informed"], "backends": ["cosine"]}},
        ).id
        create_webhook_endpoint(session, team.id, "https://hooks.example.org/unmask")
        sub = submissions.create_submission(
            session, team.id, "pitch", "builtin", builtin_name="pitch", visibility="public"
        )
        job_id = record_finished_job(
            session, team_id=team.id, submission_id=sub.id, protocol_id=protocol_id, rows=rows
        )
    with database.session_scope() as session:
        (delivery,) = session.query(WebhookDelivery).filter_by(job_id=job_id).all()
        (entry,) = delivery.payload["data"]["summary"]
    assert entry["dummy_score"] == pytest.approx(0.5)  # the webhook payload

    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        blob_dir=tmp_path / "blobs",
        token_hmac_key=HMAC_KEY,
    )
    store = LocalBlobStore(tmp_path / "blobs", signing_key=HMAC_KEY)
    with TestClient(create_app(settings, database=database, blob_store=store)) as client:
        page = client.get(f"/protocols/{protocol_id}").text
    assert 'data-column="dummy_score"' in page and "Dummy score" in page  # the page's column
    assert ">0.50<" in page  # its value, with the catalogue's digits
    database.dispose()

    api_rows = [
        {"scenario": r.scenario, "backend": r.backend, "seed": r.seed, "metric": r.metric,
         "value": r.value}
        for r in rows
    ]  # fmt: skip
    for table in (rows_table(api_rows, "job"), summary_table(document)):  # the CLI tables
        text = _rendered(table)
        assert "Dummy score" in text and "0.50 ± 0.35" in text
