"""Imports go one way: flows -> tasks -> {fastmice, storage}; the core never loads Prefect."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_core_and_store_do_not_import_prefect():
    # In a fresh interpreter: other tests may already have imported Prefect here.
    code = ("import sys, fastmice, fastmice.datasets, fastmice.metrics, storage, "
            "storage.datasets; bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('prefect', 'tasks', 'flows')); assert not bad, bad")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_no_module_imports_against_the_direction():
    forbidden = {"fastmice": ("prefect", "tasks", "flows", "storage"),
                 "storage": ("prefect", "tasks", "flows", "fastmice"),
                 "tasks": ("flows",)}
    offenders = []
    for package, banned in forbidden.items():
        for path in (ROOT / package).rglob("*.py"):
            for line in path.read_text().splitlines():
                words = line.split()
                if len(words) >= 2 and words[0] in ("import", "from") and \
                        words[1].split(".")[0] in banned:
                    offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert not offenders, offenders
