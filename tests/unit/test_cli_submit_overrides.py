"""``unmask submit`` (cli/submit.py): an override that JSON cannot carry is bad input (exit 2,
one line on stderr), never a traceback from encoding the request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from cli import submit
from cli.client import UnmaskClient


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_override_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500)

    def from_env(*args: Any, **kwargs: Any) -> UnmaskClient:
        client = UnmaskClient("http://api.test", "unm_x", transport=httpx.MockTransport(handler))
        protocol = {"id": 1, "name": "p", "version": 1}
        monkeypatch.setattr(client, "find_protocol", lambda name: protocol)
        return client

    monkeypatch.setattr(UnmaskClient, "from_env", from_env)
    monkeypatch.setattr(submit, "_create_submission", lambda *a: {"id": 2, "name": "s"})
    argv = ["-p", "p", "--builtin", "pitch", "--no-wait", "--override", f"training.lr={value}"]
    assert submit.run_standalone(argv) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and "training.lr" in stderr


def _job(state: str) -> dict[str, Any]:
    stage = {
        "id": 1, "name": "train", "position": 0, "state": state, "progress": 0.5,
        "attempts": 1, "worker_host": "w", "heartbeat_at": None, "started_at": None,
        "finished_at": None, "error": None, "log_tail": "",
    }  # fmt: skip
    return {
        "id": 5, "submission_id": 2, "protocol_id": 1, "state": state, "progress": 0.5,
        "config": {}, "config_hash": "0" * 64, "team_slug": "lab", "error_message": "boom",
        "created_at": "2026-01-01T00:00:00Z",
        "started_at": None, "finished_at": None, "stages": [stage], "charged": True,
        "evaluator": None, "phase": None, "cost": None,
    }  # fmt: skip


def _fake_api(monkeypatch: pytest.MonkeyPatch, state: str) -> None:
    """A protocol, a submission, and a job in ``state`` for 50 polls (then failed)."""
    polls = iter(range(50))

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(201, json=_job("queued"))
        now = state if next(polls, None) is not None else "failed"
        return httpx.Response(200, json=_job(now))

    def from_env(*args: Any, **kwargs: Any) -> UnmaskClient:
        client = UnmaskClient("http://api.test", "unm_x", transport=httpx.MockTransport(handler))
        protocol = {"id": 1, "name": "p", "version": 1}
        monkeypatch.setattr(client, "find_protocol", lambda name: protocol)
        return client

    monkeypatch.setattr(UnmaskClient, "from_env", from_env)
    monkeypatch.setattr(submit, "_create_submission", lambda *a: {"id": 2, "name": "s"})


@pytest.mark.parametrize("flag", ["--poll", "--timeout"])
@pytest.mark.parametrize("value", ["-1", "nan"])
def test_a_bad_wait_time_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    _fake_api(monkeypatch, "running")
    argv = ["-p", "p", "--builtin", "pitch", "--poll", "0", flag, value]
    assert submit.run_standalone(argv) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and flag in stderr


def test_a_json_file_that_cannot_be_written_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _fake_api(monkeypatch, "failed")
    target = tmp_path / "no" / "such" / "folder" / "out.json"
    argv = ["-p", "p", "--builtin", "pitch", "--poll", "0", "--json", str(target)]
    assert submit.run_standalone(argv) == 2
    stderr = capsys.readouterr().err
    assert stderr.splitlines()[-1].startswith("unmask submit: --json")
