"""What the reliability battery's tests share: tiny data, the command in a subprocess, store
snapshots, and the rows of the battery's table (printed at the end of the session).

The data are tiny (240 samples, 2 views, 3 view groups of 20 anchors), so each case costs
about the fixed price of two commands; the commands talk to the session's Prefect test
server (``PREFECT_API_URL``), never start one of their own.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import fastmice
from fastmice.datasets import make_multiview_blobs
from pipeline.ingest import save_views_dir
from pipeline.keys import RUN

ROOT = Path(__file__).resolve().parents[2]
K, GROUPS, ANCHORS, SEED = 3, 3, 20, 5
N_FIRST, N_NEW = 200, 40
#: The ensemble options of every ``cluster`` of the battery.
OPTIONS = ["--k", K, "--groups", GROUPS, "--anchors", ANCHORS, "--seed", SEED]


def make_data(folder: Path) -> dict[str, Any]:
    """The battery's data files under ``folder`` and the labels they must get.

    ``tiny/`` (views + labels, N_FIRST samples), ``new/`` (N_NEW more samples, for
    ``append``); ``labels`` is the library's ``FastMICE(...).fit(Xs).labels_`` on ``tiny``,
    ``labels_extended`` the same with 2 more groups.
    """
    Xs, y = make_multiview_blobs(N_FIRST + N_NEW, n_views=2, n_clusters=K, separation=2.5,
                                 random_state=11)
    Xs = fastmice.check_views(Xs)
    first = [np.ascontiguousarray(X[:N_FIRST]) for X in Xs]
    save_views_dir(folder / "tiny", first, y[:N_FIRST])
    save_views_dir(folder / "new", [np.ascontiguousarray(X[N_FIRST:]) for X in Xs], y[N_FIRST:])

    def fit(n_groups: int) -> np.ndarray:
        return fastmice.FastMICE(K, n_groups=n_groups, n_anchors=ANCHORS, mode="best",
                                 random_state=SEED).fit(first).labels_

    return {"dir": folder, "tiny": folder / "tiny", "new": folder / "new",
            "labels": fit(GROUPS), "labels_extended": fit(GROUPS + 2)}


def env(api_url: str | None = None, fault: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a command: the checkout on the path, the test server, a fault."""
    out = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    for name in ("FASTMICE_STORE", "FASTMICE_DEBUG", "FASTMICE_FAULT"):
        out.pop(name, None)
    if api_url is not None:
        out["PREFECT_API_URL"] = api_url
    if fault is not None:
        out["FASTMICE_FAULT"] = fault
    out.update(extra)
    return out


def wait_until(check: Any, timeout: float, pause: float = 0.1) -> bool:
    """Poll ``check()`` until it is true (True) or ``timeout`` seconds pass (False)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return True
        time.sleep(pause)
    return False


def command(args: list[Any]) -> list[str]:
    return [sys.executable, "-m", "cli", *map(str, args)]


def run_cli(args: list[Any], api_url: str | None = None, *, fault: str | None = None,
            check: bool = True, timeout: float = 300, **extra: str
            ) -> subprocess.CompletedProcess:
    """``fastmice ARGS`` in a subprocess; asserts status 0 with ``check``."""
    result = subprocess.run(command(args), cwd=ROOT, env=env(api_url, fault, **extra),
                            capture_output=True, text=True, timeout=timeout, check=False)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def start_cli(args: list[Any], api_url: str | None = None, *, fault: str | None = None,
              **extra: str) -> subprocess.Popen:
    """``fastmice ARGS`` started in the background (stdout and stderr piped)."""
    return subprocess.Popen(command(args), cwd=ROOT, env=env(api_url, fault, **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def one_json(stdout: str) -> dict[str, Any]:
    """The only JSON object on stdout (and nothing else there)."""
    assert len(stdout.strip().splitlines()) == 1, stdout
    return json.loads(stdout)


def labels_of(store: Any, run_id: str) -> np.ndarray:
    """The labels a run stored (its labels table's ``label`` column)."""
    record = store.read_record(RUN, run_id)
    return store.get(record["labels"]).column("label").to_numpy()


def library_ids(store: Any, run_id: str, labels: np.ndarray) -> np.ndarray:
    """The library's ``labels`` with the cluster ids run ``run_id`` gave them: an ``extend``
    or a ``recluster`` matches its ids to its parent run's (``relabel`` in its record)."""
    relabel = store.read_record(RUN, run_id).get("relabel")
    if not relabel:
        return labels
    mapping = dict(map(tuple, relabel["mapping"]))
    return np.array([mapping[int(label)] for label in labels])


def tree(root: Path) -> dict[str, str]:
    """Every file and folder under ``root``: a file's sha256, ``"dir"`` for a folder."""
    if not root.exists():
        return {}
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def counts(store: Any, *kinds: str) -> dict[str, int]:
    """How many artifacts of each kind the store holds."""
    return {kind: len(store.list(kind)) for kind in kinds}


def flip_byte(path: Path, offset: int = -5) -> None:
    """Corrupt a file in place: one bit of one byte."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
