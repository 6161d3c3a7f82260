"""Shared fixtures: small multi-view data, a temporary store, and an opt-in Prefect API.

Prefect writes its database and settings under ``PREFECT_HOME``: it is pointed at a new
temporary folder here, before anything imports Prefect. Only tests that request
``prefect_api`` start Prefect's test server (about 10 s, once per session), so the pure
tests never pay for it.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

# Never the developer's ~/.prefect (or a shell's PREFECT_HOME): a fresh folder per session.
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="fastmice-prefect-home-")
atexit.register(shutil.rmtree, os.environ["PREFECT_HOME"], ignore_errors=True)
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
# Quiet consoles in tests; failures are asserted on, not read from logs.
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def prefect_api():
    """A Prefect test server for the whole session; yields its API URL.

    Subprocesses (the command-line tests) get the URL through ``PREFECT_API_URL`` and so
    start no embedded server of their own.
    """
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield PREFECT_API_URL.value()


@pytest.fixture(scope="session")
def blobs():
    """600 samples in 3 dense views (20/30/40 features), 4 clusters, validated views."""
    import fastmice
    from fastmice.datasets import make_multiview_blobs

    Xs, y = make_multiview_blobs(n_samples=600, n_views=3, n_clusters=4, random_state=0)
    return fastmice.check_views(Xs), y


@pytest.fixture
def store(tmp_path):
    """An empty local artifact store."""
    from storage import open_store

    return open_store(tmp_path / "store")


@pytest.fixture
def registered(store, blobs):
    """The store with ``blobs`` registered as dataset ``"blobs"`` in one batch."""
    from pipeline.ingest import register_batch

    Xs, y = blobs
    register_batch(store, "blobs", Xs, y, mode="create")
    return store


def _split_batches(Xs, y, sizes, seed=0):
    order = np.random.default_rng(seed).permutation(len(y))
    bounds = np.cumsum([0, *sizes])
    return [([np.ascontiguousarray(X[order[a:b]]) for X in Xs], y[order[a:b]])
            for a, b in itertools.pairwise(bounds)]


@pytest.fixture(scope="session")
def split_batches():
    """``split(Xs, y, sizes, seed=0)``: shuffle the samples, cut them into batches."""
    return _split_batches


def _tree(root: Path) -> dict[str, int]:
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="session")
def file_tree():
    """``file_tree(root)``: every file under root with its size (is a store unchanged?)."""
    return _tree


class Battery:
    """The rows of the reliability battery's table: section, case, expected, got, passed.

    Printed as a Markdown table at the end of the session (with counts per section), and
    written to the file named by ``$FASTMICE_BATTERY_REPORT`` if it is set.
    """

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str, bool]] = []

    def record(self, section: str, case: str, expected: str, got: str, ok: bool) -> bool:
        """Add a row; return ``ok`` (for ``assert battery.record(...)``)."""
        self.rows.append((section, case, expected, got, bool(ok)))
        return bool(ok)

    def markdown(self) -> str:
        lines = ["| section | case | expected | got | ok |", "|---|---|---|---|---|"]
        lines += [f"| {s} | {c} | {e} | {g} | {'yes' if ok else '**NO**'} |"
                  for s, c, e, g, ok in self.rows]
        sections: dict[str, list[bool]] = {}
        for s, *_, ok in self.rows:
            sections.setdefault(s, []).append(ok)
        lines.append("")
        lines += [f"* {s}: {sum(oks)} of {len(oks)} as expected" for s, oks in sections.items()]
        return "\n".join(lines) + "\n"


_BATTERY = Battery()


@pytest.fixture(scope="session")
def battery():
    """The reliability battery's table (see :class:`Battery`)."""
    return _BATTERY


def pytest_terminal_summary(terminalreporter):
    if not _BATTERY.rows:
        return
    text = _BATTERY.markdown()
    terminalreporter.write_sep("=", "reliability battery")
    terminalreporter.write(text)
    if path := os.environ.get("FASTMICE_BATTERY_REPORT"):
        Path(path).write_text(text)
