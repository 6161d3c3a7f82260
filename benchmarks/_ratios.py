"""``pipeline_cost.py --ratios``: what a command costs against its work, on Hdigit, in one
session of commands (fastmice's own Prefect home, which shares one local API server; no
``PREFECT_API_URL``), local store and a local S3-compatible server (``infra/s3_local.sh``).

Prints the fixed-cost split (imports, the first and a later command's start-up, the flow)
and the ratios of issue 22, item 2:

* a command whose every step is stored, against ``fastmice runs`` (bar 2x), on a local
  store and on the S3 server (S3 against local: bar 2x);
* ``fastmice cluster`` with nothing stored, from the second command of the session on,
  against the library's fit + 5 s;
* ``append`` of a 10 % batch + ``recluster`` against a fresh ``cluster`` of the union
  (bar 0.5x, wall).

Alternating A/B pairs (``--repeats``) give medians; the stored answers on S3 and on the
local store alternate too, at least 5 times each (each is ~0.1 s: one slow command of two
would move a median of two).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _measure import run_measured, start_local_s3, work_folder

REPO = Path(__file__).resolve().parents[1]
HDIGIT = REPO.parent / "shared" / "datasets" / "Hdigit.npz"


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PREFECT_") and k != "FASTMICE_STORE"}
    env.update(FASTMICE_PREFECT_HOME=str(work / "own-home"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    return env


def _split(work: Path) -> tuple[Path, Path, Path]:
    """Hdigit in a random order (its file is sorted by class), its first 90 % and its last
    10 %, as .npz files of the same layout."""
    with np.load(HDIGIT) as z:
        arrays = {name: z[name] for name in z.files}
    n = arrays["labels"].shape[0]
    order = np.random.default_rng(0).permutation(n)
    arrays = {k: v[order] for k, v in arrays.items()}
    cut = n - n // 10
    union, base, batch = work / "union.npz", work / "base.npz", work / "batch.npz"
    np.savez(union, **arrays)
    np.savez(base, **{k: v[:cut] for k, v in arrays.items()})
    np.savez(batch, **{k: v[cut:] for k, v in arrays.items()})
    return union, base, batch


def _library(data: Path) -> float:
    # The command line's defaults: its mode (best), its seed (0), both cores.
    code = ("import time, numpy as np; from fastmice import FastMICE; "
            "from pipeline.params import PIPELINE_MODE; "
            "z = np.load(sys.argv[1]); Xs = [z[f] for f in sorted(z.files) if f != 'labels']; "
            "k = len(set(z['labels'].tolist())); t = time.perf_counter(); "
            "FastMICE(k, random_state=0, n_jobs=2, mode=PIPELINE_MODE).fit(Xs); "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", "import sys; " + code, str(data)], cwd=REPO,
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    return float(out.stdout.split()[-1])


def ratios(repeats: int = 3, timeout: float = 1800, keep: bool = False) -> dict[str, Any]:
    """Run the session in a work folder of its own (removed unless ``keep``); the figures
    and ratios."""
    with work_folder("fastmice-ratios-", keep) as work:
        return _session(work, repeats, timeout)


def _session(work: Path, repeats: int, timeout: float) -> dict[str, Any]:
    env, logs = _env(work), work / "logs"
    logs.mkdir()
    union, base, batch = _split(work)
    local, remote = str(work / "store"), "s3://fastmice/ratios"
    cli = [sys.executable, "-m", "cli"]
    count = iter(range(1000))

    def run(args: list[str], extra: dict[str, str] | None = None) -> Any:
        m = run_measured(f"{next(count):02d}-{args[0]}", [*cli, *args, "--json"],
                         {**env, **(extra or {})}, logs, timeout)
        if m.returncode != 0:
            raise RuntimeError(f"{args}: status {m.returncode}; see {m.log}")
        return m

    imports = {m: run_measured(f"import-{m}", [sys.executable, "-c", f"import {m}"], env, logs,
                               600).seconds for m in ("cli.main", "flows.pipeline")}
    first = run(["cluster", str(base), "--name", "base", "--store", local])
    sys.path.insert(0, str(REPO))
    from cli.launch import wait_for_warm_process

    warm = wait_for_warm_process(env)
    pairs = [(run(["runs", "--store", local]).seconds,
              run(["cluster", str(base), "--name", "base", "--store", local]).seconds)
             for _ in range(repeats)]
    # Fresh against incremental, alternating, each in a store of its own; the library's fit
    # of the union beside them.
    fresh, appended, reclustered, library = [], [], [], []
    for r in range(repeats):
        fresh.append(run(["cluster", str(union), "--name", "union", "--store",
                          str(work / f"fresh-{r}")]))
        incremental = str(work / f"incremental-{r}")
        run(["cluster", str(base), "--name", "base", "--store", incremental])
        appended.append(run(["append", "base", str(batch), "--store", incremental]))
        reclustered.append(run(["recluster", "base", "--store", incremental]))
        library.append(_library(union))
    s3 = start_local_s3(work)
    try:
        s3_first = run(["cluster", str(base), "--name", "base", "--store", remote], s3)
        s3_stored, local_stored = [], []
        for _ in range(max(5, repeats)):
            s3_stored.append(run(["cluster", str(base), "--name", "base", "--store", remote],
                                 s3).seconds)
            local_stored.append(run(["cluster", str(base), "--name", "base", "--store",
                                     local]).seconds)
    finally:
        subprocess.run(["bash", str(REPO / "infra" / "s3_local.sh"), "stop", "--dir",
                        str(work / "s3")], check=False, capture_output=True)
    return _summary(work, warm, imports, first, pairs, fresh, appended, reclustered, library,
                    s3_first, (s3_stored, local_stored))


def _summary(work: Path, warm: bool, imports: dict[str, float], first: Any,
             pairs: list[tuple[float, float]], fresh: list[Any], appended: list[Any],
             reclustered: list[Any], library: list[float], s3_first: Any,
             s3_pairs: tuple[list[float], list[float]]) -> dict[str, Any]:
    """The figures (medians over the repeats) and the ratios against their bars."""
    runs_s = statistics.median(p[0] for p in pairs)
    stored_s = statistics.median(p[1] for p in pairs)
    fresh_s = statistics.median(m.seconds for m in fresh)
    fresh_flow_s = statistics.median(m.output["seconds"] for m in fresh)
    library_s = statistics.median(library)
    incremental_s = statistics.median(a.seconds + b.seconds
                                      for a, b in zip(appended, reclustered, strict=True))
    s3_s, s3_local_s = (statistics.median(seconds) for seconds in s3_pairs)
    return {
        "load": os.getloadavg()[0], "work": str(work), "warm_process": warm,
        "imports_s": imports,
        "first_cluster": {"wall_s": first.seconds, "flow_s": first.output["seconds"]},
        "fresh_cluster_later_command": {"wall_s": fresh_s, "flow_s": fresh_flow_s,
                                        "outside_flow_s": fresh_s - fresh_flow_s,
                                        "all_wall_s": [m.seconds for m in fresh]},
        "library_fit_s": library_s, "library_all_s": library,
        "runs_s": runs_s, "stored_answer_s": stored_s,
        "stored_vs_runs": stored_s / runs_s,
        "fresh_minus_fit_s": fresh_s - library_s,
        "append_s": statistics.median(m.seconds for m in appended),
        "recluster_s": statistics.median(m.seconds for m in reclustered),
        "recluster_flow_s": statistics.median(m.output["seconds"] for m in reclustered),
        "incremental_vs_fresh": incremental_s / fresh_s,
        "s3_first_cluster_s": s3_first.seconds,
        "s3_stored_answer_s": s3_s, "s3_local_stored_answer_s": s3_local_s,
        "s3_all_s": s3_pairs[0], "s3_local_all_s": s3_pairs[1],
        "s3_vs_local_stored": s3_s / s3_local_s,
        "bars": {"stored <= 2x runs": stored_s <= 2 * runs_s,
                 "S3 stored <= 2x local": s3_s <= 2 * s3_local_s,
                 "fresh <= fit + 5 s": fresh_s <= library_s + 5,
                 "append+recluster <= 0.5x fresh": incremental_s <= 0.5 * fresh_s},
    }


def main(repeats: int, keep: bool = False) -> int:
    started = time.time()
    report = ratios(repeats, keep=keep)
    report["benchmark_s"] = time.time() - started
    print(json.dumps(report, indent=2))
    return 0 if all(report["bars"].values()) else 1
