"""Every name is imported from the module that defines it: no module (a package's
``__init__.py`` aside, which states the package's public names) passes on names it imports."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ("services", "api", "workers", "cli", "unmask_client", "benchmarks", "scripts")


def _sources() -> list[Path]:
    return [
        path
        for package in CODE
        for path in sorted((ROOT / package).rglob("*.py"))
        if "api_client" not in path.parts
    ]


def _module_file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    if base.with_suffix(".py").exists():
        return base.with_suffix(".py")
    return None  # a package (its __init__ may re-export) or outside the project


def _defined_and_imported(path: Path) -> tuple[set[str], set[str]]:
    defined: set[str] = set()
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            imported |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    return defined, imported - defined


def test_names_come_from_the_module_that_defines_them() -> None:
    cache: dict[Path, tuple[set[str], set[str]]] = {}
    offenders = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            source = _module_file(node.module)
            if source is None:
                continue
            defined, imported = cache.setdefault(source, _defined_and_imported(source))
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} {node.module}.{alias.name}"
                for alias in node.names
                if alias.name in imported and alias.name not in defined
            ]
    assert offenders == []


def test_no_module_marks_a_name_for_re_export() -> None:
    """``from x import name as name`` is the spelling that tells linters a name is re-exported."""
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}"
        for path in _sources()
        if path.name != "__init__.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    ]
    assert offenders == []
