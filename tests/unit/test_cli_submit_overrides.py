"""``unmask submit`` (cli/submit.py): an override that JSON cannot carry is bad input (exit 2,
one line on stderr), never a traceback from encoding the request."""

from __future__ import annotations

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
