"""Every API server takes its uvicorn options from one place (``api.server.server_options``): the
image's command, the embedded demo's server and the benchmarks'. (That they then answer alike:
tests/integration/test_api_server_options.py.)"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from api.middleware.header_timeout import HeaderTimeoutH11Protocol
from api.server import main, server_options

ROOT = Path(__file__).resolve().parents[2]
# In code: uvicorn's Python API, or its command line as a subprocess.
STARTS_UVICORN = re.compile(r"uvicorn\.(Config|run|Server)\(|\"-m\",\s*\"uvicorn\"")


def _run_calls(monkeypatch: pytest.MonkeyPatch, *argv: str) -> dict[str, Any]:
    """What ``python -m api.server argv`` hands ``uvicorn.run`` (which is not run)."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(
        sys.modules["uvicorn.main"],
        "run",
        lambda app, **kwargs: calls.append({"app": app, **kwargs}),
    )
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    assert exit_info.value.code in (0, None)
    (call,) = calls
    return call


def test_the_options_name_the_problem_answering_protocol() -> None:
    from uvicorn.importer import import_from_string

    options = server_options()
    assert import_from_string(options["http"]) is HeaderTimeoutH11Protocol
    assert options["proxy_headers"] is True


def test_the_command_line_serves_the_app_with_the_options(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("UVICORN_HTTP", "UVICORN_PROXY_HEADERS"):
        monkeypatch.delenv(name, raising=False)
    call = _run_calls(monkeypatch, "--host", "0.0.0.0", "--port", "8123")
    assert call["app"] == "api.app:app"
    assert (call["host"], call["port"]) == ("0.0.0.0", 8123)
    for name, value in server_options().items():
        assert call[name] == value, name
    # An option given on the command line still wins.
    assert _run_calls(monkeypatch, "--http", "h11")["http"] == "h11"


def test_nothing_starts_uvicorn_around_the_shared_options() -> None:
    """The image runs ``python -m api.server``; every Python module that starts uvicorn itself
    passes :func:`server_options` (tests may start bare servers for their own apps)."""
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    (command,) = [line for line in dockerfile.splitlines() if line.startswith("CMD [")]
    assert "exec python -m api.server " in command and "uvicorn" not in command
    bypassing = []
    for folder in ("api", "cli", "services", "workers", "benchmarks", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text()
            if STARTS_UVICORN.search(text) and "server_options" not in text:
                bypassing.append(str(path.relative_to(ROOT)))
    assert not bypassing, f"start uvicorn with api.server.server_options(): {bypassing}"
