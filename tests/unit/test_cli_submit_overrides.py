"""``unmask submit`` (cli/submit.py): an override that JSON cannot carry is bad input (exit 2,
one line on stderr), never a traceback from encoding the request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from cli import submit
from cli.client import UnmaskClient
from support.fake_api import PROTOCOL, SUBMISSION, Handler, polled_job


def _fake_api(monkeypatch: pytest.MonkeyPatch, handler: Handler) -> None:
    """``unmask submit``'s client on ``handler``: the protocol found, the submission made."""

    def from_env(*args: Any, **kwargs: Any) -> UnmaskClient:
        client = UnmaskClient("http://api.test", "unm_x", transport=httpx.MockTransport(handler))
        monkeypatch.setattr(client, "find_protocol", lambda name: dict(PROTOCOL))
        return client

    monkeypatch.setattr(UnmaskClient, "from_env", from_env)
    monkeypatch.setattr(submit, "_create_submission", lambda *a: dict(SUBMISSION))


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_override_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    # Any request would fail (500: exit 3): the override is refused before one is sent.
    _fake_api(monkeypatch, lambda request: httpx.Response(500))
    argv = ["-p", "p", "--builtin", "pitch", "--no-wait", "--override", f"training.lr={value}"]
    assert submit.run_standalone(argv) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and "training.lr" in stderr


@pytest.mark.parametrize("flag", ["--poll", "--timeout"])
@pytest.mark.parametrize("value", ["-1", "nan"])
def test_a_bad_wait_time_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    _fake_api(monkeypatch, polled_job("running"))
    argv = ["-p", "p", "--builtin", "pitch", "--poll", "0", flag, value]
    assert submit.run_standalone(argv) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and flag in stderr


def test_a_json_file_that_cannot_be_written_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _fake_api(monkeypatch, polled_job("failed"))
    target = tmp_path / "no" / "such" / "folder" / "out.json"
    argv = ["-p", "p", "--builtin", "pitch", "--poll", "0", "--json", str(target)]
    assert submit.run_standalone(argv) == 2
    stderr = capsys.readouterr().err
    assert stderr.splitlines()[-1].startswith("unmask submit: --json")


def test_an_archive_with_no_wait_is_accepted_before_its_job_is_queued(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Jobs need an accepted submission (409 while validating): ``--no-wait`` skips the job's
    wait, never the archive's validation."""
    archive = tmp_path / "anon.tar"
    archive.write_bytes(b"x")
    waited: list[int] = []
    client = UnmaskClient(
        "http://api.test", "unm_x", transport=httpx.MockTransport(polled_job("x"))
    )
    monkeypatch.setattr(client, "submit_archive", lambda *a, **k: {**SUBMISSION, "status": "x"})

    def wait_until_accepted(submission_id: int, **kwargs: Any) -> dict[str, Any]:
        waited.append(submission_id)
        return {**SUBMISSION, "status": "accepted"}

    monkeypatch.setattr(client, "wait_until_accepted", wait_until_accepted)
    source = (None, {}, None, archive)
    submission = submit._create_submission(client, 1, source, None, "private", (60.0, 0.0))
    assert waited == [SUBMISSION["id"]] and submission["status"] == "accepted"
