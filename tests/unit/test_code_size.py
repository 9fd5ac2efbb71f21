"""Readable units: no function in services/, api/ or cli/ over 100 lines, no api/ module over 600
lines, no services/ module over 800 lines (counted from the code with ``ast``; a function's lines
run from its ``def`` (or first decorator) to its last line, docstring included). The generated
client (unmask_client/api_client/) is not counted; the few known offenders below are listed by
name so that no new one appears while they are split."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_FUNCTION_LINES = 100
MAX_API_MODULE_LINES = 600
MAX_SERVICES_MODULE_LINES = 800

# Known offenders, to split along their meaning (not to pass the gate): none left; a new one
# is split, not listed.
KNOWN_LONG_FUNCTIONS: set[str] = set()
KNOWN_LONG_MODULES: set[str] = set()


def _long_functions(folder: str) -> list[str]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        if "api_client" in path.parts:
            continue  # generated
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                name = f"{path.relative_to(ROOT).as_posix()} {node.name}"
                if length > MAX_FUNCTION_LINES and name not in KNOWN_LONG_FUNCTIONS:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length}")
    return found


def test_no_function_in_services_api_or_cli_is_over_100_lines() -> None:
    long = _long_functions("services") + _long_functions("api") + _long_functions("cli")
    assert not long, "functions over 100 lines (split them):\n" + "\n".join(long)


def test_no_api_module_is_over_600_lines() -> None:
    sizes = {p: len(p.read_text().splitlines()) for p in sorted((ROOT / "api").rglob("*.py"))}
    long = [f"{p.relative_to(ROOT)}: {n}" for p, n in sizes.items() if n > MAX_API_MODULE_LINES]
    assert not long, "api/ modules over 600 lines (split them):\n" + "\n".join(long)


def test_no_services_module_is_over_800_lines() -> None:
    sizes = {p: len(p.read_text().splitlines()) for p in sorted((ROOT / "services").rglob("*.py"))}
    long = [
        f"{p.relative_to(ROOT)}: {n}"
        for p, n in sizes.items()
        if n > MAX_SERVICES_MODULE_LINES
        and p.relative_to(ROOT).as_posix() not in KNOWN_LONG_MODULES
    ]
    assert not long, "services/ modules over 800 lines (split them):\n" + "\n".join(long)


def test_the_known_offenders_still_exist() -> None:
    """A known offender that was split leaves the list (so the list only shrinks)."""
    for entry in KNOWN_LONG_FUNCTIONS:
        path, name = entry.split(" ")
        tree = ast.parse((ROOT / path).read_text())
        lengths = [
            (node.end_lineno or node.lineno)
            - min([node.lineno, *(d.lineno for d in node.decorator_list)])
            + 1
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name == name
        ]
        assert lengths and max(lengths) > MAX_FUNCTION_LINES, f"{entry}: drop it from the list"
    for path in KNOWN_LONG_MODULES:
        lines = len((ROOT / path).read_text().splitlines())
        assert lines > MAX_SERVICES_MODULE_LINES, f"{path} is {lines} lines: drop it from the list"
