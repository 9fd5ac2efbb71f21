"""Readable units: no function in services/ or api/ over 100 lines, no api/ module over 600 lines
(counted from the code with ``ast``; a function's lines run from its ``def`` (or first decorator)
to its last line, docstring included)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_FUNCTION_LINES = 100
MAX_API_MODULE_LINES = 600


def _long_functions(folder: str) -> list[str]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length}")
    return found


def test_no_function_in_services_or_api_is_over_100_lines() -> None:
    long = _long_functions("services") + _long_functions("api")
    assert not long, "functions over 100 lines (split them):\n" + "\n".join(long)


def test_no_api_module_is_over_600_lines() -> None:
    sizes = {p: len(p.read_text().splitlines()) for p in sorted((ROOT / "api").rglob("*.py"))}
    long = [f"{p.relative_to(ROOT)}: {n}" for p, n in sizes.items() if n > MAX_API_MODULE_LINES]
    assert not long, "api/ modules over 600 lines (split them):\n" + "\n".join(long)
