"""docs/architecture.md is the map of the code: every file and module it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
CODE = ("services", "api", "workers", "cli", "unmask_client", "tests", "scripts", "benchmarks")
# A table row or section names files relative to its package (``pipeline/plan.py`` is under
# services/, ``kinds/base.py`` under services/anonymizers/).
BASES = tuple(
    ROOT / base
    for base in ("", "services", "services/platform", "services/anonymizers", "docs", "api")
)
FILE = re.compile(r"(?<![\w./-])([A-Za-z0-9_][\w./-]*\.(?:py|md|html|js))\b")
DOTTED = re.compile(r"`((?:services|api|workers|cli)(?:\.\w+)+)`")


def _text() -> str:
    return DOC.read_text()


def test_every_path_it_names_exists() -> None:
    missing = [
        name
        for name in sorted(set(FILE.findall(_text())))
        if "/" in name and not any((base / name).exists() for base in BASES)
    ]
    assert missing == []


def test_every_file_name_it_names_exists_somewhere_in_the_code() -> None:
    known = {p.name for package in CODE for p in (ROOT / package).rglob("*") if p.is_file()}
    known |= {p.name for p in (ROOT / "docs").glob("*.md")}
    missing = [
        name for name in sorted(set(FILE.findall(_text()))) if "/" not in name and name not in known
    ]
    assert missing == []


def test_every_dotted_module_it_names_exists() -> None:
    """``services.pipeline.config.EvaluationConfig``: a module, then names defined in it."""
    missing = []
    for dotted in sorted(set(DOTTED.findall(_text()))):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            module = ROOT.joinpath(*parts[:cut])
            source = module.with_suffix(".py")
            if not source.exists() and (module / "__init__.py").exists():
                source = module / "__init__.py"
            if source.exists():
                rest = parts[cut:]
                if rest and not re.search(rf"\b{re.escape(rest[0])}\b", source.read_text()):
                    missing.append(dotted)
                break
        else:
            missing.append(dotted)
    assert missing == []
