"""One leaderboard: the JSON route, the page and the CSV rank by the same rule (utility tiers, then
the ranking metric), on a protocol with a WER bound and a submission whose speech is unusable."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.metrics import catalogue
from services.platform import identity, protocols, results, submissions
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from support.seeding import record_finished_job

HMAC_KEY = "one-ranking-test-key"
WER_BOUND = 10.0
PROTOCOL_BODY = {
    "config": {
        "scenarios": ["ignorant", "semi-informed"],
        "backends": ["cosine"],
        "utility": {"max_wer_increase_percent": WER_BOUND},
    },
    "leaderboard": {"metric": "eer_percent"},
}
UTILITY = (catalogue.UTILITY_SCENARIO, catalogue.UTILITY_BACKEND, catalogue.AGGREGATE_SEED)


class Board:
    """Four public submissions: the highest EER has unusable speech, the next breaks the WER
    bound, two are within it."""

    def __init__(self, database: Database) -> None:
        with database.session_scope() as session:
            team = identity.create_team(session, "lab")
            self.protocol_id = protocols.create_protocol(session, "p", body=PROTOCOL_BODY).id
            self.token = identity.issue_team_token(
                session, "lab", hmac_key=HMAC_KEY, scopes=["read"]
            ).plaintext
            # name: (EER %, WER increase in points, usable speech)
            spec = {
                "silence": (50.0, 0.0, 0.0),
                "garbled": (48.0, 35.0, 1.0),
                "useful": (30.0, 4.0, 1.0),
                "better-useful": (40.0, 6.0, 1.0),
            }
            self.ids = {}
            for name, (eer, wer_increase, usable) in spec.items():
                sub = submissions.create_submission(
                    session, team.id, name, "builtin", builtin_name="pitch", visibility="public"
                )
                rows = [
                    results.ResultRow("semi-informed", "cosine", 0, catalogue.EER.key, eer),
                    results.ResultRow("semi-informed", "cosine", -1, catalogue.EER.key, eer),
                    results.ResultRow(*UTILITY, catalogue.WER_INCREASE.key, wer_increase),
                    results.ResultRow(*UTILITY, catalogue.USABLE_SPEECH.key, usable),
                ]
                record_finished_job(
                    session,
                    team_id=team.id,
                    submission_id=sub.id,
                    protocol_id=self.protocol_id,
                    rows=rows,
                )
                self.ids[name] = sub.id


@pytest.fixture
def board_client(tmp_path: Path) -> Iterator[tuple[Board, Any]]:
    from fastapi.testclient import TestClient

    from api.app import create_app

    url = f"sqlite:///{tmp_path / 'board.db'}"
    upgrade_database(url)
    database = Database(url)
    store = LocalBlobStore(tmp_path / "blobs", signing_key=HMAC_KEY)
    board = Board(database)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        blob_dir=tmp_path / "blobs",
        token_hmac_key=HMAC_KEY,
    )
    with TestClient(create_app(settings, database=database, blob_store=store)) as client:
        yield board, client
    database.dispose()


def test_json_page_and_csv_rank_identically_with_utility_tiers(
    board_client: tuple[Board, Any],
) -> None:
    board, client = board_client
    expected = [board.ids[n] for n in ("better-useful", "useful", "garbled", "silence")]
    answer = client.get(
        f"/v1/protocols/{board.protocol_id}/leaderboard",
        headers={"Authorization": f"Bearer {board.token}"},
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    json_order = [e["submission_id"] for e in body["entries"]]
    # The unusable submission has the highest EER but must not rank first in the JSON.
    assert json_order == expected
    assert [e["rank"] for e in body["entries"]] == [1, 2, 3, 4]
    assert [body["tiers"][e["tier"]] for e in body["entries"]] == [
        "within the utility bound",
        "within the utility bound",
        "above the utility bound",
        "unusable speech",
    ]
    page = client.get(f"/protocols/{board.protocol_id}")
    page_order = [int(x) for x in re.findall(r'<tr data-submission="(\d+)"', page.text)]
    assert page_order == json_order
    csv_text = client.get(f"/protocols/{board.protocol_id}/leaderboard.csv").text
    exported = list(csv.DictReader(io.StringIO(csv_text)))
    assert [int(r["submission_id"]) for r in exported] == json_order
    assert [int(r["rank"]) for r in exported] == [1, 2, 3, 4]


def test_json_and_page_refuse_a_back_end_the_protocol_does_not_score(
    board_client: tuple[Board, Any],
) -> None:
    board, client = board_client
    answer = client.get(
        f"/v1/protocols/{board.protocol_id}/leaderboard?backend=plda",
        headers={"Authorization": f"Bearer {board.token}"},
    )
    # plda is a back-end (the document's enum) without a leaderboard here: not found.
    assert answer.status_code == 404 and "plda" in answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    unknown = client.get(
        f"/v1/protocols/{board.protocol_id}/leaderboard?backend=nope",
        headers={"Authorization": f"Bearer {board.token}"},
    )
    assert unknown.status_code == 422 and "backend" in unknown.text
    assert client.get(f"/protocols/{board.protocol_id}?backend=plda").status_code == 422


def test_views_read_stored_summaries_and_parse_the_protocol_once(
    board_client: tuple[Board, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JSON leaderboard's ``value`` and ``metrics``, the page and the CSV read the summaries
    stored when each job succeeded: no view aggregates the results table, and the protocol's
    config is parsed once for all of them."""
    from services.platform.leaderboard import service, view

    board, client = board_client
    calls = {"aggregate": 0, "parse": 0}
    aggregate, parse = service._aggregated_values, view.parse_config

    def counted_aggregate(*args: Any, **kwargs: Any) -> Any:
        calls["aggregate"] += 1
        return aggregate(*args, **kwargs)

    def counted_parse(*args: Any, **kwargs: Any) -> Any:
        calls["parse"] += 1
        return parse(*args, **kwargs)

    monkeypatch.setattr(service, "_aggregated_values", counted_aggregate)
    monkeypatch.setattr(view, "parse_config", counted_parse)
    monkeypatch.setattr(view, "_DEFAULTS_CACHE", {})  # another test may have filled it
    headers = {"Authorization": f"Bearer {board.token}"}
    url = f"/v1/protocols/{board.protocol_id}/leaderboard"
    first, second = client.get(url, headers=headers), client.get(url, headers=headers)
    assert first.status_code == second.status_code == 200, first.text
    assert client.get(f"/protocols/{board.protocol_id}").status_code == 200
    assert client.get(f"/protocols/{board.protocol_id}/leaderboard.csv").status_code == 200
    assert calls == {"aggregate": 0, "parse": 1}
    entries = {e["submission_id"]: e for e in second.json()["entries"]}
    useful = entries[board.ids["useful"]]
    assert useful["value"] == useful["metrics"][catalogue.EER.key] == 30.0
    assert set(useful["metrics"]) == {catalogue.EER.key}  # its (scenario, back-end) only
