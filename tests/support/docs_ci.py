"""The documented trusted-submitter setup of docs/ci.md ("Without a stored token"), read once for
the unit test (valid request, valid workflow) and the integration test (posted and used)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Without a stored token"


def oidc_section() -> str:
    """The section's Markdown."""
    text = (ROOT / "docs" / "ci.md").read_text()
    start = text.index(SECTION)
    return text[start : text.index("\n## ", start + 1)]


def documented_registration() -> dict[str, Any]:
    """The JSON body of the documented `curl ... /v1/admin/trusted-submitters`."""
    block = re.search(r"```bash\n(.*?)```", oidc_section(), re.S)
    assert block is not None and "/v1/admin/trusted-submitters" in block.group(1)
    body: dict[str, Any] = json.loads(block.group(1).split("-d '", 1)[1].rsplit("'", 1)[0])
    return body


def documented_workflow_yaml() -> str:
    """The documented GitHub workflow."""
    block = re.search(r"```yaml\n(.*?)```", oidc_section(), re.S)
    assert block is not None
    return block.group(1)
