"""Building blocks of ``benchmarks/scale.py``: generated data, a library fit and a
``fastmice`` command, each in a new process, with wall seconds, peak RSS and CPU seconds.

``python benchmarks/_scale_runs.py _fit FOLDER K N_JOBS GROUPS MODE`` is the process a library
fit runs in (one JSON line).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

from _measure import run_measured  # noqa: E402
from scale_data import write_views_dir  # noqa: E402

__all__ = ["cli", "library", "run_fit"]

def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ, PREFECT_HOME=str(work / "prefect"), PYTHONPATH=str(REPO),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env.pop("PREFECT_API_URL", None)  # the embedded API: its start-up is part of a run
    return env


def _data(root: Path, kind: str, n: int, k: int, rows: tuple[int, int] | None = None) -> Path:
    name = f"{kind}-{n}-k{k}" + ("" if rows is None else f"-rows{rows[0]}-{rows[1]}")
    folder, seconds = write_views_dir(root / name, kind, n, k, rows=rows)
    if seconds:
        print(f"  generated {folder} in {seconds:.0f} s", file=sys.stderr)
    return folder


def library(work: Path, folder: Path, k: int, n_jobs: int = -1,
            groups: int | None = None, mode: str = "paper") -> dict[str, Any]:
    """``FastMICE(k, n_jobs=..., mode=...).fit`` on views read into memory, in a new process
    (at most ``groups`` view groups at once: ``fastmice.groups_at_once``)."""
    m = run_measured(f"fit-{folder.name}-{n_jobs}-{groups}-{mode}",
                     [sys.executable, __file__, "_fit", str(folder), str(k), str(n_jobs),
                      str(groups or 0), mode], _env(work), work, timeout=3600)
    return {**(m.output or {"error": Path(m.log).read_text()[-500:]}),
            "wall": round(m.seconds, 1), "peak_rss_gb": round(m.peak_rss_mb / 1024, 2)}


def _runnable_threads(shares: dict[int, int], stop: threading.Event) -> None:
    """Count, every 10 ms, how many of this process's other threads are runnable (state
    R: running or waiting for a core; a thread waiting for a lock or for work is not)."""
    me = threading.get_native_id()
    while not stop.wait(0.01):
        runnable = 0
        for task in os.listdir("/proc/self/task"):
            try:
                stat = Path(f"/proc/self/task/{task}/stat").read_text()
            except OSError:
                continue
            runnable += int(task) != me and stat.rsplit(")", 1)[1].split()[0] == "R"
        shares[runnable] = shares.get(runnable, 0) + 1


def _fit(folder: str, k: str, n_jobs: str, groups: str = "0", mode: str = "paper") -> None:
    import hashlib
    import resource

    import fastmice
    from fastmice import _estimator
    from fastmice.metrics import clustering_scores

    # The peak RSS up to the consensus: the views and the view groups (their memory with
    # ``groups`` at once), apart from the consensus's.
    groups_peak: list[int] = []
    consensus = _estimator.consensus_with_joint

    def noting_the_groups_peak(*args: Any, **kwargs: Any) -> Any:
        groups_peak.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        return consensus(*args, **kwargs)

    _estimator.consensus_with_joint = noting_the_groups_peak

    started = time.perf_counter()
    paths = sorted(Path(folder).glob("view*.npy"), key=lambda p: int(p.stem[4:]))
    Xs, y = [np.load(p) for p in paths], np.load(Path(folder) / "labels.npy")
    read = time.perf_counter() - started
    views_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    load = os.getloadavg()[0]
    counts: dict[int, int] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=_runnable_threads, args=(counts, stop), daemon=True)
    sampler.start()
    cpu_started = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    with fastmice.record_stages() as stages, fastmice.record_stages(clock="cpu") as cpu, \
            fastmice.groups_at_once(int(groups) or None):
        labels = fastmice.FastMICE(int(k), random_state=0, n_jobs=int(n_jobs),
                                   mode=mode).fit(Xs).labels_
    seconds = time.perf_counter() - started
    used = resource.getrusage(resource.RUSAGE_SELF)
    stop.set()
    sampler.join()
    cpu_seconds = (used.ru_utime - cpu_started.ru_utime) + (used.ru_stime - cpu_started.ru_stime)
    threads = os.cpu_count() if int(n_jobs) < 0 else min(int(n_jobs), os.cpu_count())
    total = sum(counts.values()) or 1
    print(json.dumps({"mode": mode, "fit": round(seconds, 1), "read": round(read, 1),
                      "cpu": round(cpu_seconds, 1),
                      "busy": round(cpu_seconds / (seconds * threads), 3),
                      "stages": {s: round(t, 1) for s, t in stages.items()},
                      "cpu_stages": {s: round(t, 1) for s, t in cpu.items()},
                      "runnable": {n: round(c / total, 3) for n, c in sorted(counts.items())},
                      "labels_sha": hashlib.sha256(np.ascontiguousarray(labels, np.int64)
                                                   .tobytes()).hexdigest()[:16],
                      "load": [round(load, 2), round(os.getloadavg()[0], 2)],
                      "rss_views_gb": round(views_rss / 2**20, 3),
                      "rss_groups_gb": round(groups_peak[0] / 2**20, 3) if groups_peak else None,
                      "nmi": round(clustering_scores(y, labels)["nmi"], 4)}))


def cli(work: Path, label: str, *args: object) -> dict[str, Any]:
    """One ``fastmice`` command (``--json``) in a new process: its summary, wall, RSS (the
    largest process's, and ``tree_rss_gb`` of all its processes at once) and CPU seconds
    (its own and its worker processes')."""
    command = [str(Path(sys.executable).parent / "fastmice"), *map(str, args), "--json",
               "--store", str(work / "store")]
    m = run_measured(label, command, _env(work), work, timeout=3600)
    out = m.output or {"error": Path(m.log).read_text()[-800:]}
    return {**out, "wall": round(m.seconds, 1), "peak_rss_gb": round(m.peak_rss_mb / 1024, 2),
            "tree_rss_gb": None if m.tree_rss_mb is None else round(m.tree_rss_mb / 1024, 2),
            "cpu": round(m.cpu_seconds, 1), "exit": m.returncode}


def run_fit(argv: list[str]) -> None:
    """The ``_fit`` process: ``FOLDER K N_JOBS [GROUPS [MODE]]``."""
    _fit(*argv[:5])


if __name__ == "__main__" and sys.argv[1:2] == ["_fit"]:
    run_fit(sys.argv[2:])
