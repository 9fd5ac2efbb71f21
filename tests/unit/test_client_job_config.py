"""The client's typed view of ``JobOut.config`` (unmask_client/job_config.py) against job configs
the platform really stores (services/platform/jobs/config.py, one per anonymizer kind), read
back through the generated client, so a drift of the stored shape fails here."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from services.anonymizers.kinds.registry import KIND_NAMES
from services.pipeline.config import parse_config
from services.platform.jobs.config import build_job_config
from services.storage.models import ProtocolRecord, Submission
from unmask_client import Client, JobConfigView

PROTOCOL = ProtocolRecord(
    id=3,
    name="vpc-lazy",
    version=2,
    body={
        "config": {
            "synthetic": {"n_speakers": 12},
            "scenarios": ["semi-informed", "ignorant"],
            "backends": ["cosine", "plda"],
            "training": {"preset": "tiny", "epochs": 3},
        }
    },
)
# One submission per anonymizer kind, and what identifies it in the job's config.
SUBMISSIONS: dict[str, tuple[dict[str, Any], str]] = {
    "builtin": ({"builtin_name": "vtln", "builtin_params": {"alpha": 0.1}}, "vtln"),
    "archive": (
        {"archive_blob_key": "archives/t/abc", "archive_sha256": "f" * 64},
        "archives/t/abc",
    ),
    "container": (
        {"container_image": "lab/anon", "container_digest": "sha256:" + "a" * 64},
        "lab/anon@sha256:" + "a" * 64,
    ),
    "service": (
        {"service_url": "https://anon.lab.example/v1", "service_secret": "gAAAA-ciphertext"},
        "https://anon.lab.example/v1",
    ),
}


def _stored_config(kind: str, overrides: dict[str, Any]) -> dict[str, Any]:
    columns, _ = SUBMISSIONS[kind]
    submission = Submission(id=7, name="my anonymizer", kind=kind, **columns)
    return build_job_config(PROTOCOL, submission, overrides)


def _job_json(config: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": 5, "submission_id": 7, "protocol_id": 3, "state": "succeeded", "progress": 1.0,
        "config": config, "config_hash": "0" * 64, "team_slug": "lab", "error_message": None,
        "created_at": "2026-01-01T00:00:00Z", "started_at": None, "finished_at": None,
        "stages": [], "charged": True, "evaluator": None,
    }  # fmt: skip


def test_every_anonymizer_kind_has_a_case() -> None:
    assert set(SUBMISSIONS) == set(KIND_NAMES)


@pytest.mark.parametrize("kind", sorted(SUBMISSIONS))
def test_the_view_reads_a_stored_job_config_of_each_kind(kind: str) -> None:
    config = _stored_config(kind, {"seeds": [4, 1]})
    parsed = parse_config(config)
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json=_job_json(config))

    client = Client("http://api.test", "unm_x", transport=httpx.MockTransport(handler))
    job = client.job(5)
    view = client.job_config(job)
    assert seen == ["/v1/jobs/5"]  # a fetched job is not fetched again
    assert client.job_config(5) == view and len(seen) == 2
    assert view == JobConfigView.from_config(config)
    assert view.name == parsed.name == "my anonymizer on vpc-lazy v2"
    assert view.anonymizer_kind == parsed.anonymizer.kind == kind
    assert view.anonymizer_ref == SUBMISSIONS[kind][1]
    assert view.anonymizer_params == ({"alpha": 0.1} if kind == "builtin" else None)
    # The evaluation's order, not an alphabetical one.
    assert view.scenarios == tuple(parsed.scenarios) == ("semi-informed", "ignorant")
    assert view.seeds == tuple(parsed.seeds) == (4, 1)
    assert view.backends == tuple(parsed.backends) == ("cosine", "plda")
    assert (view.training_preset, view.training_epochs) == ("tiny", 3)
    assert (parsed.training.preset, parsed.training.epochs) == ("tiny", 3)
    assert view.attackers_recipe is None


def test_the_view_tolerates_unknown_missing_and_ill_typed_fields() -> None:
    assert JobConfigView.from_config({}) == JobConfigView()
    assert JobConfigView.from_config(None) == JobConfigView()
    view = JobConfigView.from_config(
        {
            "name": "x",
            "a_field_of_a_newer_server": {"anything": 1},
            # a stored section of the old single-model shape names no kind: a built-in
            "anonymizer": {"name": "pitch", "params": {}, "archive": None, "image": None},
            "scenarios": "ignorant",  # not a list
            "seeds": [0, "1"],  # not all integers
            "training": {"preset": "tiny", "epochs": True},
            "attackers": "voiceprivacy",
        }
    )
    assert (view.name, view.anonymizer_kind, view.anonymizer_ref) == ("x", "builtin", "pitch")
    assert view.anonymizer_params == {}
    assert (view.scenarios, view.seeds, view.backends) == (None, None, None)
    assert (view.training_preset, view.training_epochs) == ("tiny", None)
    assert view.attackers_recipe == "voiceprivacy"
    unknown_kind = JobConfigView.from_config({"anonymizer": {"kind": "quantum", "qubits": 3}})
    assert (unknown_kind.anonymizer_kind, unknown_kind.anonymizer_ref) == ("quantum", None)
