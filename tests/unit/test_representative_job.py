"""One rule picks the job that stands for a submission: the leaderboard, the submission page, the
badge and the comparison show the same job, also after a re-run that finished in another order
than it was created."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.metrics import catalogue
from services.platform import identity, protocols, results, submissions
from services.platform.badges import badge_data
from services.platform.leaderboard import representative_job
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from services.storage.models import ProtocolRecord, Submission
from support.seeding import record_finished_job

HMAC_KEY = "representative-test-key"
BODY = {"config": {"scenarios": ["semi-informed"], "backends": ["cosine"]}}
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _rows(eer: float) -> list[results.ResultRow]:
    return [
        results.ResultRow("semi-informed", "cosine", 0, catalogue.EER.key, eer),
        results.ResultRow("semi-informed", "cosine", -1, catalogue.EER.key, eer),
    ]


class World:
    """Two public submissions; ``rerun`` has a first job and a re-run (higher id) that finished
    EARLIER than it (they ran side by side), ``other`` one job."""

    def __init__(self, database: Database) -> None:
        with database.session_scope() as session:
            team = identity.create_team(session, "lab")
            self.protocol_id = protocols.create_protocol(session, "p", body=BODY).id
            self.token = identity.issue_team_token(
                session, "lab", hmac_key=HMAC_KEY, scopes=["read"]
            ).plaintext

            def submission(name: str) -> int:
                return submissions.create_submission(
                    session, team.id, name, "builtin", builtin_name="pitch", visibility="public"
                ).id

            def job(submission_id: int, eer: float, finished: dt.datetime) -> int:
                return record_finished_job(
                    session,
                    team_id=team.id,
                    submission_id=submission_id,
                    protocol_id=self.protocol_id,
                    rows=_rows(eer),
                    finished_at=finished,
                )

            self.rerun = submission("rerun")
            self.other = submission("other")
            self.first = job(self.rerun, 30.0, T0 + dt.timedelta(hours=2))
            self.second = job(self.rerun, 20.0, T0 + dt.timedelta(hours=1))  # the re-run
            job(self.other, 25.0, T0)


@pytest.fixture
def world_client(tmp_path: Path) -> Iterator[tuple[World, Database, Any]]:
    from fastapi.testclient import TestClient

    from api.app import create_app

    url = f"sqlite:///{tmp_path / 'rep.db'}"
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
        yield world, database, client
    database.dispose()


def _surfaces(world: World, database: Database, client: Any) -> dict[str, int]:
    """The job each surface shows for the re-run submission."""
    auth = {"Authorization": f"Bearer {world.token}"}
    board = client.get(f"/v1/protocols/{world.protocol_id}/leaderboard", headers=auth).json()
    entry = next(e for e in board["entries"] if e["submission_id"] == world.rerun)
    page = client.get(f"/submissions/{world.rerun}").text
    shown = re.search(r'Evaluation: job <a href="/jobs/(\d+)">', page)
    assert shown is not None, page[:500]
    compared = client.get(
        f"/v1/protocols/{world.protocol_id}/compare?a={world.rerun}&b={world.other}", headers=auth
    ).json()
    with database.session_scope() as session:
        protocol = session.get(ProtocolRecord, world.protocol_id)
        sub = session.get(Submission, world.rerun)
        assert protocol is not None and sub is not None
        badge = badge_data(session, protocol=protocol, submission=sub)
        rule = representative_job(session, world.rerun, world.protocol_id)
        assert rule is not None
        return {
            "rule": rule.id,
            "leaderboard": entry["job_id"],
            "page": int(shown.group(1)),
            "badge": badge.job_id,
            "compare": compared["a"]["job_id"],
        }


def test_every_surface_shows_the_representative_job_after_a_rerun(
    world_client: tuple[World, Database, Any],
) -> None:
    world, database, client = world_client
    # The re-run has the higher id but finished first: the latest finished job stands.
    seen = _surfaces(world, database, client)
    assert set(seen.values()) == {world.first}, seen


def test_a_rerun_that_finishes_later_replaces_the_job_everywhere(
    world_client: tuple[World, Database, Any],
) -> None:
    world, database, client = world_client
    with database.session_scope() as session:
        team_id = session.get(Submission, world.rerun).team_id  # type: ignore[union-attr]
        third = record_finished_job(
            session,
            team_id=team_id,
            submission_id=world.rerun,
            protocol_id=world.protocol_id,
            rows=_rows(10.0),
            finished_at=T0 + dt.timedelta(hours=3),
        )
    seen = _surfaces(world, database, client)
    assert set(seen.values()) == {third}, seen
    with database.session_scope() as session:
        # Under any protocol (the page of a submission evaluated under several), the same rule.
        anywhere = representative_job(session, world.rerun, None)
        assert anywhere is not None and anywhere.id == third
