"""Comparing two submissions over HTTP: every catalogued metric of their leaderboard jobs side
by side with b - a and the better side, utility apart, DET curves overlaid, the EER
difference's paired speaker-bootstrap interval and the per-speaker EER scatter where both jobs
kept their trials on the same grid; a submission of another protocol, an invisible one and the
same one twice are refused with a clear 4xx."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.platform import results
from services.platform.jobs import records as job_records
from services.platform.leaderboard import record_report_summary
from services.scoring import eer_report
from services.scoring.trial_scores import load_scored_trials
from services.storage.blob_interface import BlobStore
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from support.trials import keep_trials, trial_set_bytes

pytestmark = pytest.mark.integration

DET = {"pfa": [0.0, 0.2, 0.5, 1.0], "pmiss": [1.0, 0.4, 0.2, 0.0], "seed": 0}


class World:
    def __init__(
        self, client: Any, api_world: Any, protocol_body: dict[str, Any], store: BlobStore
    ) -> None:
        self.client = client
        self.store = store
        self.admin = api_world.auth(api_world.admin)
        self.a = api_world.auth(api_world.a)
        self.b = api_world.auth(api_world.b)
        self.protocol = self._protocol(protocol_body)
        other = {**protocol_body, "name": "another-protocol"}
        self.other_protocol = self._protocol(other)

    def _protocol(self, body: dict[str, Any]) -> int:
        response = self.client.post("/v1/admin/protocols", json=body, headers=self.admin)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def submission(self, name: str, visibility: str = "public", headers: Any = None) -> int:
        body = {
            "kind": "builtin",
            "name": name,
            "visibility": visibility,
            "builtin": {"name": "pitch", "params": {"semitones": 2}},
        }
        response = self.client.post("/v1/submissions", json=body, headers=headers or self.a)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def job(self, submission_id: int, protocol_id: int, headers: Any = None) -> int:
        body = {"submission_id": submission_id, "protocol_id": protocol_id}
        response = self.client.post("/v1/jobs", json=body, headers=headers or self.a)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])


def _succeed(
    database: Database,
    job_id: int,
    eer: float,
    wer_increase: float,
    *,
    store: BlobStore | None = None,
    trials: bytes | None = None,
) -> None:
    """The job succeeds with these results (and, given ``store``, keeps ``trials``)."""
    with database.session_scope() as session:
        job_records.transition_job(session, job_id, "running")
        rows = [
            results.ResultRow("semi-informed", "cosine", -1, "eer_percent", eer),
            results.ResultRow("semi-informed", "cosine", -1, "min_cllr_bits", eer / 50),
            results.ResultRow("utility", "-", -1, "wer_increase_percent", wer_increase),
        ]
        results.record_results_and_artifacts(
            session,
            job_id,
            results=rows,
            stage_id=job_records.get_stage(session, job_id, "report").id,
        )
        record_report_summary(
            session,
            job_id,
            trustworthy=True,
            trust_reasons=[],
            det_curves={"semi-informed|cosine": {**DET, "eer": eer}},
        )
        if store is not None and trials is not None:
            keep_trials(session, store, job_id, trials)
        job_records.transition_job(session, job_id, "succeeded")


@pytest.fixture()
def world(
    make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any], tmp_path: Path
) -> World:
    store = LocalBlobStore(tmp_path / "compare-blobs", signing_key="test-signing-key")
    return World(make_api_client(blob_store=store), api_world, api_protocol_body, store)


def test_compare_json_and_page(world: World, pg_database: Database) -> None:
    first, second = world.submission("first"), world.submission("second", headers=world.b)
    _succeed(pg_database, world.job(first, world.protocol), 30.0, 4.0)
    _succeed(pg_database, world.job(second, world.protocol, world.b), 42.5, 9.0)
    url = f"/v1/protocols/{world.protocol}/compare?a={first}&b={second}"
    answer = world.client.get(url, headers=world.a)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["a"]["submission_name"] == "first" and body["b"]["team_slug"] == "team-b"
    eer = next(m for m in body["metrics"] if m["metric"] == "eer_percent")
    assert (eer["a"], eer["b"], eer["difference"], eer["better"]) == (30.0, 42.5, 12.5, "b")
    cllr = next(m for m in body["metrics"] if m["metric"] == "min_cllr_bits")
    assert cllr["better"] == "b"
    [wer] = body["utility"]
    assert wer["metric"] == "wer_increase_percent" and wer["difference"] == 5.0
    assert wer["better"] == "a"  # a lower WER increase is better
    assert set(body["det_curves"]["semi-informed|cosine"]) == {"a", "b"}
    # Neither job kept its trials: no paired interval, and the JSON says why.
    assert eer["paired_interval"] is None and body["per_speaker_eer"] == {}
    assert "kept no per-trial scores" in body["paired_notes"]["semi-informed|cosine"]
    page = world.client.get(f"/protocols/{world.protocol}/compare?a={first}&b={second}")
    assert page.status_code == 200, page.text
    assert 'id="compare-metrics"' in page.text and 'id="compare-utility"' in page.text
    assert "+12.5" in page.text
    det = world.client.get(
        f"/protocols/{world.protocol}/compare/det.png",
        params={"a": first, "b": second, "curve": "semi-informed|cosine"},
    )
    assert det.status_code == 200 and det.content.startswith(b"\x89PNG")
    # The leaderboard links to it (a form selecting two rows).
    board = world.client.get(f"/protocols/{world.protocol}")
    assert 'id="compare-form"' in board.text


def test_compare_refuses_other_protocols_invisible_and_identical_submissions(
    world: World, pg_database: Database
) -> None:
    mine = world.submission("mine")
    _succeed(pg_database, world.job(mine, world.protocol), 30.0, 4.0)
    elsewhere = world.submission("elsewhere")
    _succeed(pg_database, world.job(elsewhere, world.other_protocol), 40.0, 4.0)
    url = f"/v1/protocols/{world.protocol}/compare"
    response = world.client.get(url, params={"a": mine, "b": elsewhere}, headers=world.a)
    assert response.status_code == 409
    detail = response.json()["detail"]
    assert f"submission {elsewhere} has no succeeded job under protocol {world.protocol}" in detail
    assert f"evaluated under protocol {world.other_protocol}" in detail
    page = world.client.get(
        f"/protocols/{world.protocol}/compare", params={"a": mine, "b": elsewhere}
    )
    assert page.status_code == 409 and "Cannot compare" in page.text
    hidden = world.submission("b private", visibility="private", headers=world.b)
    response = world.client.get(url, params={"a": mine, "b": hidden}, headers=world.a)
    assert response.status_code == 404
    response = world.client.get(url, params={"a": mine, "b": mine}, headers=world.a)
    assert response.status_code == 409 and "same submission" in response.json()["detail"]
    assert world.client.get(url, params={"a": mine}, headers=world.a).status_code == 422


def test_paired_interval_and_per_speaker_scatter_from_kept_trials(
    world: World, pg_database: Database
) -> None:
    """Both jobs kept their trials on one grid: the EER row gets a paired interval around the
    difference of the trials' EERs and the per-speaker EERs of both lie in the JSON, the page
    and a scatter plot. A third job on another trial grid gets no interval, and says why."""
    a_trials, b_trials = trial_set_bytes(3.0), trial_set_bytes(2.0)
    first, second = world.submission("first"), world.submission("second", headers=world.b)
    _succeed(pg_database, world.job(first, world.protocol), 10.0, 4.0,
             store=world.store, trials=a_trials)  # fmt: skip
    _succeed(pg_database, world.job(second, world.protocol, world.b), 20.0, 4.0,
             store=world.store, trials=b_trials)  # fmt: skip
    url = f"/v1/protocols/{world.protocol}/compare"
    body = world.client.get(url, params={"a": first, "b": second}, headers=world.a).json()
    eer = next(m for m in body["metrics"] if m["metric"] == "eer_percent")
    low, high = eer["paired_interval"]

    def trials_eer(blob: bytes) -> float:
        return eer_report(load_scored_trials(blob)[0]).eer_percent

    difference = trials_eer(b_trials) - trials_eer(a_trials)
    assert difference > 0 and low <= difference <= high and low < high
    assert body["paired_notes"] == {}
    pairs = body["per_speaker_eer"]["semi-informed|cosine"]
    assert pairs["speakers"] == [f"spk{k:02d}" for k in range(12)]
    assert len(pairs["a"]) == len(pairs["b"]) == 12
    assert all(0.0 <= v <= 100.0 for v in pairs["a"] + pairs["b"])
    assert np.mean(pairs["b"]) > np.mean(pairs["a"])  # b separates less: higher EERs
    page = world.client.get(f"/protocols/{world.protocol}/compare?a={first}&b={second}")
    assert f"{low:.1f} to {high:.1f}" in page.text and "compare-per-speaker" in page.text
    plot = world.client.get(
        f"/protocols/{world.protocol}/compare/per_speaker.png",
        params={"a": first, "b": second, "curve": "semi-informed|cosine"},
    )
    assert plot.status_code == 200 and plot.content.startswith(b"\x89PNG")

    third = world.submission("third")
    _succeed(pg_database, world.job(third, world.protocol), 15.0, 4.0,
             store=world.store, trials=trial_set_bytes(3.0, grid="grid-2"))  # fmt: skip
    body = world.client.get(url, params={"a": first, "b": third}, headers=world.a).json()
    eer = next(m for m in body["metrics"] if m["metric"] == "eer_percent")
    assert eer["paired_interval"] is None and body["per_speaker_eer"] == {}
    assert "scored different trials" in body["paired_notes"]["semi-informed|cosine"]
    missing = world.client.get(
        f"/protocols/{world.protocol}/compare/per_speaker.png",
        params={"a": first, "b": third, "curve": "semi-informed|cosine"},
    )
    assert missing.status_code == 404 and "scored different trials" in missing.text


def test_the_paired_bootstrap_runs_off_the_request_path(
    world: World, pg_database: Database, monkeypatch: pytest.MonkeyPatch, make_api_client: Any
) -> None:
    """While a pair's bootstrap computes, the waiting request holds no database connection (a
    leaderboard read beside it is answered), a request that stops waiting gets the rows with a
    note, and the finished result is cached for the next ask (either order)."""
    from services.platform.comparison import background

    entered, release = threading.Event(), threading.Event()
    real = background.paired_result
    calls = []

    def slow(*args: Any) -> Any:
        calls.append(args)
        entered.set()
        release.wait(30)
        return real(*args)

    monkeypatch.setattr(background, "paired_result", slow)
    sides = []
    for i, separation in enumerate((3.0, 2.0, 1.0)):
        submission = world.submission(f"s{i}")
        _succeed(pg_database, world.job(submission, world.protocol), 10.0 + i, 4.0,
                 store=world.store, trials=trial_set_bytes(separation))  # fmt: skip
        sides.append(submission)
    url = f"/v1/protocols/{world.protocol}/compare"
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(
            world.client.get, url, params={"a": sides[0], "b": sides[1]}, headers=world.a
        )
        assert entered.wait(30)
        assert pg_database.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
        board = world.client.get(f"/v1/protocols/{world.protocol}/leaderboard", headers=world.a)
        assert board.status_code == 200
        release.set()
        answer = waiting.result(60)
    assert answer.status_code == 200, answer.text
    eer = next(m for m in answer.json()["metrics"] if m["metric"] == "eer_percent")
    assert eer["paired_interval"] is not None
    swapped = world.client.get(url, params={"a": sides[1], "b": sides[0]}, headers=world.a)
    eer_ba = next(m for m in swapped.json()["metrics"] if m["metric"] == "eer_percent")
    assert eer_ba["paired_interval"] == [-eer["paired_interval"][1], -eer["paired_interval"][0]]
    assert len(calls) == 1
    # A server that does not wait: the rows now, the interval on a later ask.
    release.clear()
    impatient = make_api_client(blob_store=world.store, compare_wait_s=0)
    first = impatient.get(url, params={"a": sides[0], "b": sides[2]}, headers=world.a)
    assert first.status_code == 200, first.text
    assert "being computed" in first.json()["paired_notes"]["semi-informed|cosine"]
    release.set()
    for _ in range(100):
        later = impatient.get(url, params={"a": sides[0], "b": sides[2]}, headers=world.a)
        if not later.json()["paired_notes"]:
            break
        time.sleep(0.1)
    assert later.json()["paired_notes"] == {}
