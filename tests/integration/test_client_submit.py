"""`unmask submit` and the Python client against a running API (uvicorn on loopback, real
PostgreSQL). The workers are replaced by a thread that plays a finished evaluation: it moves the
job through its stages and records results whose EER is 10 x the pitch shift in semitones, so
the tests choose the outcome. Exit codes: 0 pass, 1 thresholds failed, 2 bad input, 3 job failed
or API error."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.client import Thresholds, UnmaskClient, check_thresholds
from cli.main import main
from services.platform import identity
from services.platform import results as result_records
from services.platform.jobs import records as job_records
from services.platform.outbox import DELIVER_WEBHOOK, REVOKE_JOB, RUN_PHASE, VALIDATE_ARCHIVE
from services.settings import Settings
from services.storage.db import Database

pytestmark = pytest.mark.integration

HMAC_KEY = "client-test-key"
PROTOCOL_BODY = {
    "name": "synthetic-ci",
    "config": {"scenarios": ["ignorant", "semi-informed"], "backends": ["cosine"]},
    "leaderboard": {"metric": "eer_percent"},
}


class PlayedWorkers:
    """Finishes each queued job shortly after its first phase is sent (in a thread)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.threads: list[threading.Thread] = []

    def senders(self) -> dict[str, Any]:
        """The outbox senders of this fake (the other topics are accepted and dropped)."""
        return {
            RUN_PHASE: lambda payload: self.enqueue_job(int(payload["job_id"])),
            REVOKE_JOB: lambda payload: None,
            VALIDATE_ARCHIVE: lambda payload: None,
            DELIVER_WEBHOOK: lambda payload: None,
        }

    def enqueue_job(self, job_id: int) -> None:
        thread = threading.Thread(target=self._run, args=(job_id,), daemon=True)
        thread.start()
        self.threads.append(thread)

    def _run(self, job_id: int) -> None:
        time.sleep(0.3)
        with self.database.session_scope() as session:
            job = job_records.get_job(session, job_id)
            semitones = float((job.config["anonymizer"]["params"] or {}).get("semitones", 0))
            job_records.transition_job(session, job_id, "running")
            for stage in job.stages:
                job_records.transition_stage(session, stage.id, "running", worker_host="played")
                job_records.heartbeat_stage(
                    session, stage.id, progress=0.5, log=f"{stage.name}...\n"
                )
                job_records.transition_stage(session, stage.id, "succeeded")
        with self.database.session_scope() as session:
            if semitones < 0:
                job_records.transition_job(
                    session, job_id, "failed", error_message="played failure"
                )
                return
            eer = 10.0 * semitones
            rows = [
                result_records.ResultRow("semi-informed", "cosine", -1, "eer_percent", eer),
                result_records.ResultRow(
                    "semi-informed", "cosine", -1, "srd_mean_disclosure_bits", 0.05
                ),
                result_records.ResultRow("semi-informed", "cosine", 0, "eer_percent", eer),
                result_records.ResultRow("ignorant", "cosine", -1, "eer_percent", eer / 2),
                # Legal metrics: top-1 linkability 100 - EER, singling out 90 - EER (%).
                result_records.ResultRow(
                    "semi-informed", "cosine", -1, "linkability_top1_percent", 100.0 - eer
                ),
                result_records.ResultRow(
                    "semi-informed", "cosine", -1, "singling_out_percent", 90.0 - eer
                ),
            ]
            result_records.record_results_and_artifacts(session, job_id, results=rows)
            job_records.transition_job(session, job_id, "succeeded")


@pytest.fixture()
def server(pg_database: Database, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """(API URL, submit+read token, admin token) of a running app."""
    import socket

    import uvicorn

    from api.app import create_app
    from api.server import server_options

    with pg_database.session_scope() as session:
        identity.create_team(session, "ci-lab")
        identity.create_team(session, "ops")
        token = identity.issue_team_token(
            session, "ci-lab", hmac_key=HMAC_KEY, scopes=["submit", "read"], expires_in_s=3600
        ).plaintext
        admin = identity.issue_team_token(
            session, "ops", hmac_key=HMAC_KEY, scopes=["admin"]
        ).plaintext
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=pg_database.url,
        blob_dir=tmp_path / "blobs",
        token_hmac_key=HMAC_KEY,
        trusted_hosts=["127.0.0.1", "localhost"],
    )
    app = create_app(settings, database=pg_database, senders=PlayedWorkers(pg_database).senders())
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", **server_options()
    )
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    import httpx

    response = httpx.post(
        f"{url}/v1/admin/protocols",
        json=PROTOCOL_BODY,
        headers={"Authorization": f"Bearer {admin}"},
    )
    assert response.status_code == 201, response.text
    yield url, token, admin
    uv.should_exit = True
    thread.join(timeout=10)


def _submit(monkeypatch: pytest.MonkeyPatch, url: str, token: str, *args: str) -> int:
    monkeypatch.setenv("UNMASK_URL", url)
    monkeypatch.setenv("UNMASK_TOKEN", token)
    return main(["submit", "--protocol", "synthetic-ci", "--poll", "0.2", *args])


def test_submit_passes_and_fails_on_thresholds(
    server: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    url, token, _ = server
    report = tmp_path / "verdict.json"
    code = _submit(
        monkeypatch,
        url,
        token,
        "--builtin",
        "pitch",
        "--param",
        "semitones=4",
        "--min-eer",
        "30",
        "--max-srd-meand",
        "0.1",
        "--json",
        str(report),
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "verdict: PASS" in captured.out and "semi-informed" in captured.out
    assert "EER % [semi-informed, cosine] = 40" in captured.out
    assert "job " in captured.err and "succeeded" in captured.err  # progress lines
    # The verdict block: the strongest attacker's EER, what it means, the trust check.
    assert "privacy:   EER 40.0 %" in captured.out and "semi-informed attacker" in captured.out
    assert "50 % = chance, higher = more private" in captured.out
    assert "attacker:  not checked" in captured.out  # the played job's report has no check
    document = json.loads(report.read_text())
    assert document["verdict"]["passed"] is True and document["job"]["state"] == "succeeded"
    # EER 20 % < 30 %: the privacy gate fails with exit code 1.
    code = _submit(
        monkeypatch,
        url,
        token,
        "--builtin",
        "pitch",
        "--param",
        "semitones=2",
        "--min-eer",
        "30",
    )
    captured = capsys.readouterr()
    assert code == 1
    assert "FAIL  EER % [semi-informed, cosine] = 20" in captured.out
    # A threshold on a metric the job did not produce fails too.
    code = _submit(
        monkeypatch,
        url,
        token,
        "--builtin",
        "pitch",
        "--param",
        "semitones=4",
        "--max-linkability",
        "0.5",
    )
    assert code == 1 and "Linkability [semi-informed, cosine]: missing" in capsys.readouterr().out
    # A CI gate may require a trustworthy verdict: an unknown trust check fails it.
    code = _submit(
        monkeypatch,
        url,
        token,
        "--builtin",
        "pitch",
        "--param",
        "semitones=4",
        "--require-trustworthy",
    )
    captured = capsys.readouterr()
    assert code == 1, captured.out
    assert "FAIL  report trust check: unknown" in captured.out


def test_legal_metric_thresholds_fail_a_run_when_exceeded(
    server: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, token, _ = server
    pitch = ("--builtin", "pitch", "--param", "semitones=4")  # top-1 60 %, singling out 50 %
    code = _submit(
        monkeypatch, url, token, *pitch, "--max-linkability-top1", "70", "--max-singling-out", "55"
    )
    captured = capsys.readouterr()
    assert code == 0, captured.out
    assert "Top-1 link % [semi-informed, cosine] = 60 (ok: required <= 70)" in captured.out
    assert "Singling out % [semi-informed, cosine] = 50 (ok: required <= 55)" in captured.out
    code = _submit(monkeypatch, url, token, *pitch, "--max-linkability-top1", "50")
    captured = capsys.readouterr()
    assert code == 1
    assert "FAIL  Top-1 link % [semi-informed, cosine] = 60" in captured.out
    code = _submit(monkeypatch, url, token, *pitch, "--max-singling-out", "40")
    captured = capsys.readouterr()
    assert code == 1
    assert "FAIL  Singling out % [semi-informed, cosine] = 50" in captured.out
    # Not measured (the ignorant rows carry no legal metrics): fails, never passes silently.
    code = _submit(
        monkeypatch, url, token, *pitch, "--scenario", "ignorant", "--max-singling-out", "99"
    )
    assert code == 1 and "Singling out % [ignorant, cosine]: missing" in capsys.readouterr().out


def test_submit_exit_codes_for_bad_input_failed_jobs_and_api_errors(
    server: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, token, _ = server
    # The job fails on the server: 3.
    assert _submit(monkeypatch, url, token, "--builtin", "pitch", "--param", "semitones=-2") == 3
    assert "failed: played failure" in capsys.readouterr().err
    # Usage errors and 4xx refusals: 2.
    assert _submit(monkeypatch, url, token, "--builtin", "pitch", "--image", "x@sha256:1") == 2
    assert _submit(monkeypatch, url, token, "--builtin", "no-such-anonymizer") == 2
    assert "body.builtin.name" in capsys.readouterr().err
    monkeypatch.setenv("UNMASK_TOKEN", token)
    assert main(["submit", "--protocol", "no-such-protocol", "--builtin", "pitch"]) == 2
    assert _submit(monkeypatch, url, "", "--builtin", "pitch") == 2
    assert "UNMASK_TOKEN" in capsys.readouterr().err
    # A bad token (401) or an unreachable server: 3.
    assert _submit(monkeypatch, url, "unm_" + "x" * 43, "--builtin", "pitch") == 3
    assert _submit(monkeypatch, "http://127.0.0.1:9", token, "--builtin", "pitch") == 3


def test_the_client_packages_submit_gates_like_unmask_submit(
    server: tuple[str, str, str], tmp_path: Path
) -> None:
    """``python -m unmask_client.submit`` (the ``unmask-client`` distribution's own command):
    the same flags, table, verdict and exit codes as ``unmask submit``."""
    import io

    from unmask_client import Client, submit

    url, token, _ = server
    env = {"UNMASK_URL": url, "UNMASK_TOKEN": token}

    def run(*args: str, environ: dict[str, str] = env) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        argv = ["--protocol", "synthetic-ci", "--poll", "0.2", *args]
        code = submit.main(argv, environ, out, err)
        return code, out.getvalue(), err.getvalue()

    report = tmp_path / "verdict.json"
    code, out, err = run(
        "--builtin", "pitch", "--param", "semitones=4", "--min-eer", "30",
        "--max-srd-meand", "0.1", "--json", str(report),
    )  # fmt: skip
    assert code == 0, err
    assert "EER (%) [semi-informed, cosine] = 40 (ok: required >= 30)" in out
    assert "SRD MeanD (bits) [semi-informed, cosine] = 0.05" in out
    assert out.rstrip().endswith("verdict: PASS")
    header, first, second = out.splitlines()[1:4]
    assert header.split()[:2] == ["scenario", "back-end"] and "Top-1 link (%)" in header
    assert first.split()[:3] == ["ignorant", "cosine", "20"]  # the evaluation's order
    assert second.split()[:3] == ["semi-informed", "cosine", "40"]  # never cut to "4…"
    assert "succeeded" in err and "/jobs/" in err  # progress on stderr
    document = json.loads(report.read_text())
    assert document["verdict"]["passed"] is True and document["job"]["state"] == "succeeded"
    code, out, _ = run("--builtin", "pitch", "--param", "semitones=2", "--min-eer", "30")
    assert code == 1 and "FAIL  EER (%) [semi-informed, cosine] = 20" in out
    code, out, _ = run("--builtin", "pitch", "--param", "semitones=4", "--max-singling-out", "5")
    assert code == 1 and "FAIL  Singling out (%) [semi-informed, cosine] = 50" in out
    code, out, _ = run("--builtin", "pitch", "--param", "semitones=4", "--min-cllr", "0.5")
    assert code == 1 and "min Cllr (bits) [semi-informed, cosine]: missing" in out
    code, out, _ = run("--builtin", "pitch", "--param", "semitones=4", "--max-wer-increase", "5")
    assert code == 1 and "the protocol measures no WER" in out
    code, out, err = run("--builtin", "pitch", "--param", "semitones=-2", "--min-eer", "30")
    assert code == 3 and "failed: played failure" in err
    assert run("--builtin", "pitch", "--image", "x@sha256:1")[0] == 2
    code, _, err = run("--builtin", "no-such-anonymizer")
    assert code == 2 and "no-such-anonymizer" in err and err.count("\n") == 1
    code, _, err = run("--builtin", "pitch", environ={"UNMASK_URL": url})
    assert code == 2 and "UNMASK_TOKEN" in err
    assert run("--builtin", "pitch", environ={**env, "UNMASK_TOKEN": "unm_" + "x" * 43})[0] == 3
    assert run("--builtin", "pitch", environ={**env, "UNMASK_URL": "http://127.0.0.1:9"})[0] == 3
    code, out, _ = run("--builtin", "pitch", "--param", "semitones=3", "--no-wait")
    assert code == 0 and out.strip().isdigit()
    with Client(url, token) as unmask:  # the played job finishes before the server stops
        assert str(unmask.wait_for_job(int(out), poll_s=0.2).state) == "succeeded"


def test_no_wait_prints_the_job_id_and_the_client_reads_it_back(
    server: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, token, _ = server
    code = _submit(
        monkeypatch,
        url,
        token,
        "--builtin",
        "pitch",
        "--param",
        "semitones=3",
        "--no-wait",
        "--idempotency-key",
        "ci-run-7",
        "--public",
    )
    assert code == 0
    job_id = int(capsys.readouterr().out.strip())
    with UnmaskClient(url, token) as client:
        job = client.wait_for_job(job_id, poll_s=0.2, timeout_s=30)
        assert job["state"] == "succeeded"
        verdict = check_thresholds(
            client.results(job_id)["results"], Thresholds(min_eer=25, max_srd_meand=0.1)
        )
        assert verdict.passed and verdict.backends == ["cosine"]
        assert client.me()["team_slug"] == "ci-lab"
        # The same idempotency key returns the same job.
        protocol = client.find_protocol("synthetic-ci")
        again = client.create_job(job["submission_id"], protocol["id"], idempotency_key="ci-run-7")
        assert again["id"] == job_id


def test_submit_to_a_phase_and_rerun_outdated_from_the_command_line(
    server: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import datetime as dt

    import httpx

    from services.pipeline import stage_versions

    url, token, admin = server
    now = dt.datetime.now(dt.UTC)
    hour = dt.timedelta(hours=1)
    headers = {"Authorization": f"Bearer {admin}"}
    protocol_id = httpx.get(f"{url}/v1/protocols", headers=headers).json()[0]["id"]
    for body in (
        {
            "name": "warm-up",
            "starts_at": (now - 3 * hour).isoformat(),
            "ends_at": (now - 2 * hour).isoformat(),
        },
        {"name": "main", "starts_at": (now - hour).isoformat()},
    ):
        created = httpx.post(f"{url}/v1/protocols/{protocol_id}/phases", json=body, headers=headers)
        assert created.status_code == 201, created.text
    monkeypatch.setenv("UNMASK_URL", url)
    monkeypatch.setenv("UNMASK_TOKEN", token)
    assert main(["phases", "--protocol", "synthetic-ci"]) == 0
    listed = capsys.readouterr().out
    assert "warm-up:" in listed and "closed" in listed and "main:" in listed and "open" in listed
    # After a phase's end: exit 2 with one line naming the phase.
    code = _submit(
        monkeypatch,
        url,
        token,
        "--builtin",
        "pitch",
        "--param",
        "semitones=3",
        "--phase",
        "warm-up",
    )
    captured = capsys.readouterr()
    assert code == 2
    assert "phase 'warm-up' ended at" in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    code = _submit(
        monkeypatch, url, token, "--builtin", "pitch", "--param", "semitones=3", "--phase", "main"
    )
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    # A scorer version bump: the administrator re-runs the outdated result (not charged).
    monkeypatch.setitem(stage_versions.STAGE_VERSIONS, "score", 2)
    monkeypatch.setenv("UNMASK_TOKEN", admin)
    assert main(["rerun-outdated", "--protocol", "synthetic-ci"]) == 0
    out = capsys.readouterr().out
    assert "1 re-runs queued (not charged)" in out
    rerun_id = int(out.split("re-run job ")[1].split()[0])
    with UnmaskClient(url, token) as client:
        rerun = client.wait_for_job(rerun_id, timeout_s=30, poll_s=0.2)
    assert rerun["state"] == "succeeded" and rerun["charged"] is False
    assert rerun["evaluator"]["stage_versions"]["score"] == 2
    monkeypatch.setenv("UNMASK_TOKEN", token)
    assert main(["rerun-outdated", "--protocol", "synthetic-ci"]) == 3  # 403: not an admin
    assert "admin" in capsys.readouterr().err


def test_admin_protocol_and_phase_commands_over_http(
    server: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    url, token, admin = server
    monkeypatch.setenv("UNMASK_URL", url)
    monkeypatch.setenv("UNMASK_TOKEN", admin)
    config = tmp_path / "protocol.yaml"
    config.write_text(
        "name: ignored\nanonymizer: {name: pitch}\nscenarios: [ignorant, semi-informed]\n"
        "backends: [cosine]\n"
    )
    assert main(["admin", "protocol", "register", "cli-made", str(config)]) == 0
    captured = capsys.readouterr()
    assert "protocol cli-made v1 (id " in captured.out and "registered" in captured.out
    assert "anonymizer, name left out" in captured.err
    assert main(["admin", "protocol", "register", "cli-made", str(config)]) == 0
    assert "v1" in (again := capsys.readouterr().out) and "unchanged" in again
    # The checks of `unmask evaluate`: a corpus that cannot be drawn is refused (exit 2).
    config.write_text("synthetic: {n_speakers: 12, utts_per_speaker: 6}\n")
    assert main(["admin", "protocol", "register", "cli-small", str(config)]) == 2
    assert "exceeds n_speakers = 12" in capsys.readouterr().err
    assert main(["admin", "protocol", "list"]) == 0
    listed = capsys.readouterr().out
    assert "synthetic-ci v1" in listed and "cli-made v1" in listed and "cli-small" not in listed

    assert main(["admin", "phase", "add", "dev", "-p", "cli-made", "--limit", "3"]) == 0
    assert "dev: " in (added := capsys.readouterr().out) and "3 jobs per team" in added
    assert main(["admin", "phase", "update", "dev", "-p", "cli-made", "--limit", "5"]) == 0
    assert "5 jobs per team" in capsys.readouterr().out
    assert main(["admin", "phase", "list", "-p", "cli-made"]) == 0
    assert "dev: " in (phases := capsys.readouterr().out) and "open" in phases
    assert main(["admin", "phase", "add", "x", "-p", "cli-made", "--starts-at", "tomorrow"]) == 2
    assert "--starts-at 'tomorrow': expected an ISO 8601 time" in capsys.readouterr().err
    assert main(["admin", "phase", "delete", "dev", "-p", "cli-made"]) == 0
    assert main(["admin", "phase", "list", "-p", "cli-made"]) == 0
    assert "no phases" in capsys.readouterr().out
    # A token without the admin scope: refused by the server, exit 3 (auth), one line.
    monkeypatch.setenv("UNMASK_TOKEN", token)
    assert main(["admin", "protocol", "register", "cli-other", str(config)]) == 3
    assert "403" in capsys.readouterr().err


CLEAN_VENV_SCRIPT = """
import json, os, sys
try:
    import numpy  # noqa: F401
    sys.exit("numpy is importable: the venv is not clean")
except ImportError:
    pass
from unmask_client import Client, UnmaskError
from unmask_client.api_client.models import JobOut

with Client.from_env() as unmask:
    protocol = unmask.find_protocol("synthetic-ci")
    submission = unmask.submit_builtin("pitch +4 (package)", "pitch", {"semitones": 4})
    job = unmask.create_job(submission.id, protocol.id, idempotency_key="pkg-1")
    replay = unmask.create_job(submission.id, protocol.id, idempotency_key="pkg-1")
    assert isinstance(replay, JobOut) and replay.id == job.id, replay
    done = unmask.wait_for_job(job.id, poll_s=0.2)
    rows = unmask.results(done.id).results
    board = unmask.leaderboard(protocol.id)
    try:
        unmask.job(10**9)
        missing = None
    except UnmaskError as exc:
        missing = exc.status
    print(json.dumps({
        "state": str(done.state),
        "eer": sorted({r.value for r in rows
                       if r.metric == "eer_percent" and r.scenario == "semi-informed"}),
        "jobs": [j.id for j in unmask.iter_jobs(page_size=1)],
        "board_metrics": [dict(row.metrics.additional_properties) for row in board.entries],
        "missing": missing,
        "modules": sorted({m.split(".")[0] for m in sys.modules}
                          & {"cli", "services", "numpy", "torch"}),
    }))
"""

# The client's own CI gate, run as integrators' CI runs it (in-process here, so that
# sys.modules shows afterwards what the command imported).
CLEAN_VENV_SUBMIT = """
import json, sys
from unmask_client.submit import main
code = main(["--protocol", "synthetic-ci", "--builtin", "pitch", "--param", "semitones=4",
             "--poll", "0.2", "--min-eer", "30", "--max-srd-meand", "0.1"])
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules}
                                                   & {"cli", "services", "numpy", "torch",
                                                      "typer", "click", "rich", "pydantic"})}))
"""


@pytest.mark.slow  # builds a wheel and a virtual environment (about a minute)
def test_the_client_package_installs_alone_in_a_clean_venv_and_submits(
    server: tuple[str, str, str], tmp_path: Path
) -> None:
    import os
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    source = tmp_path / "src"
    shutil.copytree(root / "clients" / "python", source, symlinks=False)  # the package's copy
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", str(source), "-w", str(tmp_path / "dist")],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("unmask_client-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=300)
    venv_python = str(tmp_path / "venv" / "bin" / "python")
    venv_pip = [venv_python, "-m", "pip", "--disable-pip-version-check", "-q", "install"]
    subprocess.run([*venv_pip, "--no-deps", str(wheel)], check=True, timeout=300)
    # Its own small dependencies only (from the pip cache or the index): no numpy, no torch.
    subprocess.run([*venv_pip, "httpx", "attrs", "python-dateutil"], check=True, timeout=600)
    url, token, _ = server
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [venv_python, "-c", CLEAN_VENV_SCRIPT],
        cwd=tmp_path,  # not the repository: nothing of it on sys.path
        env={**env, "UNMASK_URL": url, "UNMASK_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["state"] == "succeeded" and report["eer"] == [40.0]
    assert len(report["jobs"]) == 1 and report["missing"] == 404
    assert report["board_metrics"] and report["board_metrics"][0]["eer_percent"] == 40.0
    assert report["modules"] == []
    # The command integrators' CI runs: the console script, and in-process to see its imports.
    gate = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "unmask-submit"), "--protocol", "synthetic-ci",
         "--builtin", "pitch", "--param", "semitones=2", "--poll", "0.2", "--min-eer", "30"],
        cwd=tmp_path, env={**env, "UNMASK_URL": url, "UNMASK_TOKEN": token},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert gate.returncode == 1, gate.stderr[-3000:]
    assert "FAIL  EER (%) [semi-informed, cosine] = 20" in gate.stdout
    done = subprocess.run(
        [venv_python, "-c", CLEAN_VENV_SUBMIT],
        cwd=tmp_path, env={**env, "UNMASK_URL": url, "UNMASK_TOKEN": token},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "verdict: PASS" in done.stdout
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"code": 0, "modules": []}  # numpy (and the CLI's libraries) never imported
