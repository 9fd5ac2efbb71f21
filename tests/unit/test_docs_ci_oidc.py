"""docs/ci.md, "Without a stored token": the workflow shown is valid for the example action, and
the registration body is what the API accepts (the integration test posts it and exchanges a
token against it: tests/integration/test_api_oidc.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from api.schemas import TrustedSubmitterCreate
from support.docs_ci import documented_registration, documented_workflow_yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_registration_is_a_valid_request() -> None:
    body = TrustedSubmitterCreate.model_validate(documented_registration())
    assert body.issuer == "https://token.actions.githubusercontent.com"
    assert body.allow_pull_requests is False


def test_the_documented_workflow_uses_the_action_without_a_token() -> None:
    workflow = yaml.safe_load(documented_workflow_yaml())
    assert workflow["permissions"]["id-token"] == "write"
    (step,) = workflow["jobs"]["unmask"]["steps"]
    assert step["uses"].split("@")[0].endswith("examples/github-action")
    action = yaml.safe_load((ROOT / "examples/github-action/action.yml").read_text())
    assert "token" not in step["with"] and set(step["with"]) <= set(action["inputs"])
    required = {name for name, spec in action["inputs"].items() if spec.get("required")}
    assert required <= set(step["with"])
