"""The layers, computed from the code's own imports (ast, no import is executed).

- No import cycle among the modules of services/, workers/, api/ and cli/: module-level and
  function-level imports both count (an import inside a function is a cycle postponed, not
  avoided), and so does the ``__init__`` of every package an import passes through that is not
  the importing module's own package (importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``).
- services/ imports no web or queue framework (FastAPI, Starlette, Celery, kombu, redis) and no
  module of api/, workers/ or cli/.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("services", "workers", "api", "cli")
FORBIDDEN_IN_SERVICES = ("fastapi", "starlette", "celery", "kombu", "redis")


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _imported_names(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """Every absolute module name ``module`` imports (with the line), at any depth of the AST;
    ``from x import y`` yields ``x.y`` (a submodule or a name in ``x``)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            yield source, node.lineno
            for alias in node.names:
                yield f"{source}.{alias.name}", node.lineno


def _graph() -> dict[str, dict[str, int]]:
    """module -> {imported project module: line}."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for module, path in modules.items():
        own_packages = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        for name, line in _imported_names(module, path):
            parts = name.split(".")
            # The deepest project module the name denotes, plus every package __init__ on the way
            # that is not one of the importer's own packages (those are already initialized).
            for i in range(1, len(parts) + 1):
                target = ".".join(parts[:i])
                if target in modules and target != module and target not in own_packages:
                    graph[module].setdefault(target, line)
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def _cycle_path(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    """One import cycle inside ``component``, with the lines of the imports."""
    members = set(component)
    start = component[0]
    path = [start]
    seen = {start}
    node = start
    while True:
        following = sorted(t for t in graph[node] if t in members)
        nxt = next((t for t in following if t == start), None) or next(
            (t for t in following if t not in seen), following[0]
        )
        path.append(f"{nxt} (line {graph[node][nxt]} of {node})")
        if nxt == start or nxt in seen:
            return " -> ".join(path)
        seen.add(nxt)
        node = nxt


def test_the_project_has_no_import_cycle() -> None:
    graph = _graph()
    assert len(graph) > 100 and "workers.app" in graph  # the scan found the code
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(
        f"{component}\n  e.g. {_cycle_path(graph, component)}" for component in cycles
    )


def test_the_cycle_check_sees_function_level_and_package_init_imports() -> None:
    # A cycle closed by an import inside a function is found...
    assert _cycles({"a": {"b": 1}, "b": {"a": 9}}) == [["a", "b"]]
    # ...and the graph records function-level imports and packages passed through.
    graph = _graph()
    assert "services.pipeline.evaluation" in graph["services.platform.jobs.runner"]
    assert "services.platform.outbox" in graph["services.platform.jobs.service"]


def test_services_import_no_web_or_queue_framework_nor_outer_layers() -> None:
    offenders = []
    for module, path in _modules().items():
        if not module.startswith("services"):
            continue
        for name, line in _imported_names(module, path):
            top = name.split(".")[0]
            if top in FORBIDDEN_IN_SERVICES or top in ("api", "workers", "cli"):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not offenders, "\n".join(sorted(set(offenders)))


def test_no_two_classes_share_a_name_across_the_code() -> None:
    """One name, one thing: the evaluation's state object and the job-state enum, the corpus
    protocol and its stored row, the stored summary and its API schema are different words."""
    seen: dict[str, list[str]] = {}
    for package in (*PACKAGES, "unmask_client"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("unmask_client/api_client/"):
                continue  # generated from the API's schemas (their names are the API's)
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ClassDef):
                    seen.setdefault(node.name, []).append(rel)
    shared = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert shared == {}, shared
