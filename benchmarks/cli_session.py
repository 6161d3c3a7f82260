"""``fastmice cluster`` as a newcomer's session runs it, against the library, on one data set.

In a fresh fastmice Prefect home (no ``PREFECT_*`` set: the shared local API server and the
warm process, docs/operations.md section 6), in one run:

1. the session's first command, on a small generated set (it starts the shared server and
   leaves the warm process);
2. ``fastmice cluster DIR --k K`` (a later command: run by the warm process): wall, seconds
   in the flow, NMI;
3. the same command run in place (``FASTMICE_WARM=0``) in another store: wall and peak RSS
   of the process (the warm child's memory is not the client's, so RSS is read here);
4. the library, ``FastMICE(K, mode=MODE, random_state=0, n_jobs=-1).fit`` on the views read
   into memory in a new process: fit seconds and peak RSS.

    python benchmarks/cli_session.py /tmp/scale23/data/partial-398191-k400 --k 400 --mode paper
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import run_measured, work_folder  # noqa: E402

from cli.launch import wait_for_warm_process  # noqa: E402


def _env(work: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.pop("FASTMICE_STORE", None)
    env.update(FASTMICE_PREFECT_HOME=str(work / "own-home"), PYTHONPATH=str(REPO), **extra)
    return env


def _command(work: Path, label: str, args: list[Any], **extra: str) -> dict[str, Any]:
    m = run_measured(label, [sys.executable, "-m", "cli", *map(str, args), "--json"],
                     _env(work, **extra), work, timeout=7200)
    if m.returncode != 0:
        raise RuntimeError(f"{label}: status {m.returncode}; see {m.log}")
    out = m.output
    return {"wall_s": round(m.seconds, 1), "flow_s": out.get("seconds"),
            "nmi": (out.get("scores") or {}).get("nmi"),
            "peak_rss_gb": round(m.peak_rss_mb / 1024, 2)}


def _library(work: Path, folder: Path, k: int, mode: str) -> dict[str, Any]:
    code = ("import json, sys, time, numpy as np; from fastmice import FastMICE; "
            "from fastmice.metrics import clustering_scores; "
            "from pipeline.ingest import read_data; "
            "Xs, y = read_data([sys.argv[1]]); Xs = [np.array(X) for X in Xs]; "
            "t = time.perf_counter(); "
            "m = FastMICE(int(sys.argv[2]), mode=sys.argv[3], random_state=0, n_jobs=-1)"
            ".fit(Xs); fit = time.perf_counter() - t; "
            "print(json.dumps({'fit_s': round(fit, 1), "
            "'nmi': clustering_scores(y, m.labels_)['nmi']}))")
    m = run_measured("library", [sys.executable, "-c", code, str(folder), str(k), mode],
                     _env(work), work, timeout=7200)
    if m.returncode != 0:
        raise RuntimeError(f"library: status {m.returncode}; see {m.log}")
    return {**m.output, "peak_rss_gb": round(m.peak_rss_mb / 1024, 2)}


def _small_set(work: Path) -> Path:
    import numpy as np

    from fastmice.datasets import make_multiview_blobs

    Xs, y = make_multiview_blobs(2000, n_views=2, n_clusters=5, random_state=0)
    path = work / "warm-up.npz"
    np.savez(path, view0=Xs[0], view1=Xs[1], labels=y)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a data folder (view*.npy) or file")
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--mode", default="best", choices=["best", "paper"])
    parser.add_argument("--skip-library", action="store_true")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work folder (stores, Prefect home, logs)")
    args = parser.parse_args(argv)
    with work_folder("fastmice-session-", args.keep) as work:
        report = _session(work, args)
    print(json.dumps(report, indent=2))
    return 0


def _session(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The commands and the library's fit of the module docstring, in ``work``."""
    report: dict[str, Any] = {"data": str(args.data), "k": args.k, "mode": args.mode,
                              "load_before": os.getloadavg()[0]}
    report["first_command"] = _command(work, "first", ["cluster", _small_set(work), "--store",
                                                       work / "warm-up-store"])
    report["warm_process_ready"] = wait_for_warm_process(_env(work), 180)
    cluster = ["cluster", args.data, "--k", args.k, "--mode", args.mode, "--name", "data"]
    report["warm_command"] = _command(work, "warm", [*cluster, "--store", work / "s1"])
    report["in_place_command"] = _command(work, "in-place", [*cluster, "--store", work / "s2"],
                                          FASTMICE_WARM="0")
    if not args.skip_library:
        report["library"] = _library(work, args.data, args.k, args.mode)
    report["load_after"] = os.getloadavg()[0]
    report["work"] = str(work)
    return report


if __name__ == "__main__":
    sys.exit(main())
