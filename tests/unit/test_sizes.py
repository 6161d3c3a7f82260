"""Rooms stay small: no module over 400 lines, no function over 60 lines, outside tests.

A function's length is its lines from ``def`` to its last line, less its docstring. Print the
largest modules and the longest functions with::

    python -m tests.unit.test_sizes
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("fastmice", "storage", "pipeline", "tasks", "flows", "cli", "benchmarks", "scripts")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
#: Functions allowed over the limit, each named with its reason (none today).
EXCEPTIONS: set[str] = set()


def modules() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def module_sizes() -> list[tuple[int, str]]:
    return sorted(((len(p.read_text().splitlines()), str(p.relative_to(ROOT)))
                   for p in modules()), reverse=True)


def function_sizes() -> list[tuple[int, str]]:
    out = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                doc = node.body[0]
                if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and \
                        isinstance(doc.value.value, str):
                    lines -= doc.end_lineno - doc.lineno + 1
                out.append((lines, f"{path.relative_to(ROOT)}:{node.name}"))
    return sorted(out, reverse=True)


def test_no_module_over_400_lines():
    assert [m for m in module_sizes() if m[0] > MAX_MODULE_LINES] == []


def test_no_function_over_60_lines():
    long = [f for f in function_sizes() if f[0] > MAX_FUNCTION_LINES and f[1] not in EXCEPTIONS]
    assert long == []


if __name__ == "__main__":
    print(f"{len(modules())} modules; the largest (limit {MAX_MODULE_LINES} lines):")
    for lines, name in module_sizes()[:8]:
        print(f"  {lines:4d}  {name}")
    print(f"the longest functions, docstring excluded (limit {MAX_FUNCTION_LINES} lines):")
    for lines, name in function_sizes()[:8]:
        print(f"  {lines:4d}  {name}" + ("  (exception: reserved file)" if name in EXCEPTIONS
                                           else ""))
