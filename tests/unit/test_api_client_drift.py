"""The generated HTTP client (unmask_client/api_client/) is what the API's OpenAPI document
generates today, and every operation id is ``<tag>-<route name>`` (the client's function names)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / ".tools" / "openapi-python-client" / "openapi_python_client"


def test_operation_ids_are_tag_and_route_name() -> None:
    from api.app import create_app
    from services.settings import Settings

    settings = Settings(_env_file=None, database_url="sqlite://", token_hmac_key="k")  # type: ignore[call-arg]
    document = create_app(settings, senders={}).openapi()
    operations = [op for path in document["paths"].values() for op in path.values()]
    ids = [op["operationId"] for op in operations]
    assert len(ids) == len(set(ids))
    for operation in operations:
        assert re.fullmatch(rf"{operation['tags'][0]}-[a-z_][a-z0-9_]*", operation["operationId"])
    # Route names, as the generated client's modules spell them.
    assert {"jobs-create_job", "protocols-get_leaderboard", "phases-rerun_outdated_results"} <= set(
        ids
    )


@pytest.mark.slow
def test_regenerating_the_client_yields_no_diff() -> None:
    if not GENERATOR.is_dir():
        pytest.skip("the client generator is not installed: make client-tool")
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_client.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "is current" in check.stdout


def test_every_response_the_api_can_give_has_a_schema() -> None:
    """A generated client parses every answer: an idempotent replay's 200 included (no
    ``parsed=None`` for an answer with a body)."""
    from api.app import create_app
    from services.settings import Settings

    settings = Settings(_env_file=None, database_url="sqlite://", token_hmac_key="k")  # type: ignore[call-arg]
    document = create_app(settings, senders={}).openapi()
    missing = [
        f"{method.upper()} {path} {code}"
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        for code, response in operation["responses"].items()
        if code != "204" and not code.startswith("3") and not response.get("content")
    ]
    assert not missing, missing
