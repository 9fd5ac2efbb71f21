"""A VoicePrivacy maker's ``data/`` folder, end to end over HTTP: the operator registers a protocol
built from the published lists (``--vpc-lists``), the maker uploads the anonymized copies
(``libri_dev_enrolls_anon/wav/<utt>.wav`` ..., packed as ``unmask submit --archive data`` packs
them) to ``POST /v1/submissions/archive``, the workers validate the archive and run the job, and
the job's results count exactly the listed trials.

Real PostgreSQL and a moto S3 server; the workers' task bodies run in this process (as
tests/integration/test_workers_archive.py runs them) on what the API queued.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.anonymizers.archive import pack_folder
from services.corpus.importers import import_corpus
from services.corpus.loaders import write_manifest
from services.corpus.protocol import manifest_path_for, save_protocol
from services.corpus.voiceprivacy import build_vpc_protocol
from services.platform.archives import validate_submission_archive
from services.platform.jobs import JobServices, job_stage_names, run_job_phase
from services.settings import Settings
from services.storage.blob_interface import BlobStore
from services.storage.db import Database
from support.voiceprivacy import build_vpc_tree

# About 1.5-2.5 min on 2 shared cores (load 6-9), most of it the job's embed and score phases.
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _vpc_protocol(tmp_path: Path) -> tuple[Any, Path]:
    """The maker's tree and the operator's protocol file built from its lists."""
    tree = build_vpc_tree(tmp_path / "toolkit", suffix="_anon")
    operator = tmp_path / "operator"
    manifest = write_manifest(
        import_corpus("kaldi", tree.data).manifest, operator / "manifest.jsonl"
    )
    protocol_file = operator / "protocol.json"
    save_protocol(
        build_vpc_protocol(
            manifest,
            tree.data,
            manifest_path=manifest_path_for(protocol_file, operator / "manifest.jsonl"),
        ),
        protocol_file,
    )
    return tree, protocol_file


def test_a_voiceprivacy_data_folder_uploaded_over_http_feeds_a_job_scored_on_the_lists(
    make_api_client: Any,
    api_world: Any,
    api_dispatcher: Any,
    pg_database: Database,
    s3_store: BlobStore,
    tmp_path: Path,
) -> None:
    tree, protocol_file = _vpc_protocol(tmp_path)
    client = make_api_client(blob_store=s3_store, challenger=False)
    admin, team = api_world.auth(api_world.admin), api_world.auth(api_world.a)
    body = {
        "name": "vpc-tiny",
        "config": {
            "protocol": str(protocol_file),
            "scenarios": ["ignorant"],
            "backends": ["cosine"],
            "training": {"preset": "tiny", "epochs": 1, "batch_size": 8, "crop_seconds": 1.5},
            # What this test checks is the path of the audio and the lists, not the metrics:
            # only the EER family (the cheap part on 2 cores).
            "metrics": {
                "bootstrap_resamples": 0,
                "srd": False,
                "linkability": False,
                "zebra": False,
                "cllr": False,
                "per_speaker_eer": False,
                "detection_rate": False,
                "legal": None,
            },
        },
        "leaderboard": {"metric": "eer_percent"},
    }
    created = client.post("/v1/admin/protocols", json=body, headers=admin)
    assert created.status_code == 201, created.text
    protocol_id = created.json()["id"]

    archive = pack_folder(tree.data, tmp_path / "upload" / "data.tar")
    uploaded = client.post(
        f"/v1/submissions/archive?name=my-anonymizer-vpc&protocol_id={protocol_id}",
        content=archive.read_bytes(),
        headers={**team, "Content-Type": "application/x-tar"},
    )
    assert uploaded.status_code == 201, uploaded.text
    submission_id = uploaded.json()["id"]
    assert api_dispatcher.validations == [submission_id]

    worker = JobServices(
        pg_database,
        s3_store,
        Settings(_env_file=None, data_dir=tmp_path / "worker", num_threads=1, challenger=False),  # type: ignore[call-arg]
        worker_host="worker",
    )
    assert validate_submission_archive(worker, submission_id) == "accepted"
    submission = client.get(f"/v1/submissions/{submission_id}", headers=team).json()
    assert submission["status"] == "accepted", submission

    job = client.post(
        "/v1/jobs", json={"submission_id": submission_id, "protocol_id": protocol_id}, headers=team
    )
    assert job.status_code == 201, job.text
    job_id = job.json()["id"]
    for phase in job_stage_names():
        outcome = run_job_phase(worker, job_id, phase)
        assert outcome.status == "succeeded", (phase, outcome)
    finished = client.get(f"/v1/jobs/{job_id}", headers=team).json()
    assert finished["state"] == "succeeded", finished

    rows = client.get(f"/v1/jobs/{job_id}/results", headers=team).json()["results"]
    eers = [r for r in rows if r["metric"] == "eer_percent" and r["scenario"] == "ignorant"]
    assert eers and all(r["value"] is not None for r in eers)
    # The trials scored are exactly the published lists' lines, per list and in all.
    artifacts = client.get(f"/v1/jobs/{job_id}/artifacts", headers=team).json()["artifacts"]
    [report] = [a for a in artifacts if a["key"].endswith("/results.json")]
    document = json.loads(s3_store.get_bytes(report["key"]))
    rows = [r for r in document["rows"] if r["scenario"] == "ignorant"]
    assert rows
    for row in rows:
        counted = {k: (v["n_target"], v["n_nontarget"]) for k, v in row["trial_lists"].items()}
        assert counted == tree.trial_counts
        assert (row["n_target"], row["n_nontarget"]) == (
            sum(t for t, _ in tree.trial_counts.values()),
            sum(n for _, n in tree.trial_counts.values()),
        )
