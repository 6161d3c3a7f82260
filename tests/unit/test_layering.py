"""Imports go one way: cli -> processes -> flows -> tasks -> pipeline -> {fastmice, storage},
and no modules import each other in a circle.

Every import statement of every module (at any depth: a function's lazy import counts) is
read with :mod:`ast`. Print the import graph by layer with::

    python -m tests.unit.test_layering
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The layers, bottom first, and the packages of ours each may import.
LAYERS = {
    "fastmice": set(),
    "storage": set(),
    "pipeline": {"fastmice", "storage"},
    "tasks": {"pipeline", "fastmice", "storage"},
    "flows": {"tasks", "pipeline", "fastmice", "storage"},
    "processes": {"flows", "tasks", "pipeline", "fastmice", "storage"},
    "cli": {"processes", "flows", "tasks", "pipeline", "fastmice", "storage"},
}
#: The only third-party packages each bottom layer may import (besides the standard library).
THIRD_PARTY = {
    "fastmice": {"numpy", "scipy", "sklearn", "joblib", "threadpoolctl"},
    "storage": {"numpy", "scipy", "pyarrow", "fsspec"},
    "pipeline": {"numpy", "scipy", "pyarrow", "matplotlib"},
}
#: Packages only the orchestration layers (tasks, flows, processes, cli) may import.
PREFECT = {"prefect", "prefect_dask", "distributed", "dask"}
#: Named exceptions, each with its reason (imports made only when a function is called).
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("storage/_s3.py", "botocore"): "s3fs's client library: its data loaded once per process, "
                                    "when an s3:// store is opened or the warm process starts",
    ("storage/_s3.py", "aiobotocore"): "the session s3fs is given for an s3:// store",
}


def imports_of(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports (relative imports excluded)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def import_graph() -> dict[str, dict[str, set[str]]]:
    """``{package: {imported top-level name: {files importing it}}}`` for every layer."""
    graph: dict[str, dict[str, set[str]]] = {}
    for package in LAYERS:
        edges: dict[str, set[str]] = defaultdict(set)
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in imports_of(path) - {"__future__", package}:
                edges[name].add(str(path.relative_to(ROOT)))
        graph[package] = dict(edges)
    return graph


def _violations() -> list[str]:
    out = []
    for package, edges in import_graph().items():
        for name, files in edges.items():
            ours = name in LAYERS
            stdlib = name in sys.stdlib_module_names
            allowed = (name in LAYERS[package] if ours else
                       stdlib or (name in THIRD_PARTY[package] if package in THIRD_PARTY
                                  else True))
            if package in THIRD_PARTY and name in PREFECT:
                allowed = False
            for file in sorted(files):
                if not allowed and (file, name) not in EXCEPTIONS:
                    out.append(f"{file} imports {name}")
    return out


def test_no_module_imports_against_the_direction():
    assert not _violations()


def module_imports() -> dict[str, set[str]]:
    """``{module: modules of ours it imports}``, dotted names, every import at any depth
    (lazy and ``TYPE_CHECKING`` ones included); ``from package import module`` counts as
    importing that module. A package's own ``__init__`` is not an edge of its modules."""
    modules = {}
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    graph = {}
    for module, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                deps.update(f"{node.module}.{alias.name}" for alias in node.names
                            if f"{node.module}.{alias.name}" in modules)
                if node.module in modules:
                    deps.add(node.module)
        graph[module] = {d for d in deps if d != module and not module.startswith(d + ".")
                         and "." in d}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_no_modules_import_each_other_in_a_circle():
    assert import_circles(module_imports()) == []


def test_the_circle_check_finds_a_circle():
    graph = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": {"a.x"}}
    assert import_circles(graph) == [["a.x", "a.y", "a.z"]]


def test_the_exceptions_are_still_needed():
    graph = import_graph()
    for (file, name) in EXCEPTIONS:
        package = file.split("/")[0]
        assert file in graph[package].get(name, set()), f"{file} no longer imports {name}"


def test_lower_layers_load_no_prefect_and_nothing_above_them():
    # In a fresh interpreter: other tests may already have imported Prefect here.
    modules = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(
        ".__init__") for layer in ("fastmice", "storage", "pipeline")
        for p in (ROOT / layer).rglob("*.py") if p.name != "__main__.py")
    code = (f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('prefect', 'tasks', 'flows', 'processes', 'cli'))\nassert not bad, bad")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr


def format_graph() -> str:
    """The import graph by layer, top first: ``package -> ours | third party``."""
    lines = []
    for package, edges in reversed(list(import_graph().items())):
        excepted = {name for (file, name) in EXCEPTIONS if file.split("/")[0] == package
                    and edges.get(name, set()) <= {file}}
        ours = sorted(n + ("*" if n in excepted else "") for n in edges if n in LAYERS)
        others = sorted(n for n in edges if n not in LAYERS and n not in sys.stdlib_module_names)
        lines.append(f"{package:<9} -> {', '.join(ours) or '(nothing of ours)':<42} | "
                     f"{', '.join(others)}")
    lines.extend(f"  * exception: {file} -> {name}: {why}"
                 for (file, name), why in EXCEPTIONS.items())
    violations = _violations()
    lines.append(f"violations: {len(violations)}" + "".join(f"\n  {v}" for v in violations))
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_graph())
