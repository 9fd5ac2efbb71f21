"""No comment or document cites a tracker issue by number ("issue 15", "(#38)"): a reader of the
code has no tracker, so each says what it means (the feature's name, the reason) instead.

Third-party trackers are cited by URL (``https://github.com/numba/numba/issues/10128``), which
this check leaves alone, as it does HTTP statuses, "issuer" and CSS colours.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = (
    "services",
    "api",
    "workers",
    "cli",
    "unmask_client",
    "benchmarks",
    "scripts",
    "docs",
    "tests",
    "examples",
    "clients",
    "deploy",
)
SUFFIXES = frozenset(
    {".py", ".md", ".html", ".css", ".js", ".sh", ".toml", ".yml", ".yaml", ".txt", ".cfg"}
)
CITATION = re.compile(
    # "issue 15", "Issue #15", "issues 14", "PR 38", a heading's anchor "...-issue-15"; not a URL
    # path ("issues/10128": the slash) nor "issuer".
    r"\b(?:issues?|tickets?|bugs?|PRs?|pull\s+requests?)\b[\s#-]*\d+"
    # A bare "#38" or "(#38)": not an HTML entity (&#38;), not a URL fragment (/#38).
    r"|(?<![\w&#/])#(?P<number>\d+)\b(?![\w-])",
    re.IGNORECASE,
)
# An all-digit CSS colour (#555, #111827, #11182780) reads like "#N"; its lengths are 3, 6, 8.
COLOUR_DIGITS = frozenset({3, 6, 8})


def citations(line: str) -> list[str]:
    """The tracker citations on one line of text."""
    return [
        match.group(0)
        for match in CITATION.finditer(line)
        if match.group("number") is None or len(match.group("number")) not in COLOUR_DIGITS
    ]


def _files() -> list[Path]:
    found = [ROOT / "README.md"]
    for folder in SCANNED:
        found += [p for p in sorted((ROOT / folder).rglob("*")) if p.suffix in SUFFIXES]
    return [p for p in found if p.is_file() and p != Path(__file__).resolve()]


def test_no_source_or_document_cites_a_tracker_issue_by_number() -> None:
    files = _files()
    assert len(files) > 500  # the scan found the tree
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {', '.join(found)}"
        for path in files
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if (found := citations(line))
    ]
    assert offenders == [], "say what the issue meant, not its number:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "line",
    [
        "# Issue 15: augmentation of the crops",
        '"""The usable-speech guard (issue 16)."""',
        "see issue #38 and issues 14",
        "(fixed in #38)",
        "# the SRD fits (#7).",
        "results-synthetic.md#attacker-ablation-issue-15",
        "PR 12 moved it",
    ],
)
def test_a_citation_is_found(line: str) -> None:
    assert citations(line)


@pytest.mark.parametrize(
    "line",
    [
        "409 issuer not in `UNMASK_OIDC_ISSUERS`",
        "answered 404: not found (HTTP 429 retried)",
        "race on its index files (https://github.com/numba/numba/issues/10128)",
        "background: #111827; color: #e5e7eb; border: #555",
        "x = 1  # 1 second is enough",
        "&#38; in a page",
        "an admin issues a token; the issue's idle figure",
        "docs/ci.md#exit-codes and #step-2",
    ],
)
def test_no_false_alarm(line: str) -> None:
    assert citations(line) == []
