"""Evidence for the pipeline's reuse on Hdigit (N=10000, 2 views), through the command line.

Runs ``fastmice`` as subprocesses with ``--json`` and prints what each run computed:

A. ``cluster`` (20 groups), then the same command again (0 groups computed, same labels),
   then ``extend --groups 10`` (exactly 10 computed); the labels are compared with
   ``FastMICE(n_clusters=10, random_state=0).fit(Xs).labels_``;
B. ``cluster`` killed with SIGKILL once half the groups are stored, then rerun (only the
   unfinished groups computed, labels identical to A);
C. ``cluster --dask local`` (labels identical to A);
D. ``recluster`` after a 90/10 split: cluster the 90 %, ``append`` the 10 %, ``recluster``;
   its NMI against ground truth and against a fresh full run on the union, and the times.

Usage: python benchmarks/pipeline_hdigit.py [--workdir DIR] [--skip-library] [--skip-dask]
       [--sections ABCD|D] [--seeds 0,1,2]

Each command starts Prefect's embedded API unless ``PREFECT_API_URL`` points at a server
(``infra/local_server.sh``), which saves ~10 s per command. The printed ``flow s`` is the
time inside the flow; ``wall s`` the whole command.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HDIGIT = ROOT.parent / "shared" / "datasets" / "Hdigit.npz"
sys.path.insert(0, str(ROOT))

from fastmice.metrics import clustering_scores  # noqa: E402
from pipeline.params import DEFAULTS  # noqa: E402
from storage import open_store  # noqa: E402


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    return env


def fastmice_cli(*args: object) -> tuple[dict, float]:
    """Run ``fastmice ARGS --json``; return its JSON object and the wall time."""
    start = time.time()
    result = subprocess.run([sys.executable, "-m", "cli", *map(str, args), "--json"],
                            cwd=ROOT, env=_env(), capture_output=True, text=True, check=False)
    wall = time.time() - start
    if result.returncode != 0:
        sys.exit(f"fastmice {' '.join(map(str, args))} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout), wall


def labels_of(summary: dict) -> np.ndarray:
    import pyarrow.parquet as pq

    return pq.read_table(summary["labels_path"]).column("label").to_numpy()


def show(step: str, summary: dict, wall: float, **extra: object) -> None:
    scores = summary.get("scores") or {}
    fields = [f"{step:<34}", f"computed {summary['groups_computed']:>2}",
              f"reused {summary['groups_reused']:>2}", f"of {summary['n_groups']:>2}",
              f"flow s {summary['seconds']:6.1f}", f"wall s {wall:6.1f}"]
    if scores:
        fields.append(f"NMI {scores['nmi']:.4f}")
    fields += [f"{k} {v}" for k, v in extra.items()]
    print(" | ".join(fields), flush=True)


def killed_run(store_dir: Path) -> int:
    """Start ``cluster``, SIGKILL it once half the groups are stored; return how many were."""
    n_groups = DEFAULTS.n_groups  # the command's, which gives no --groups
    store = open_store(store_dir)
    proc = subprocess.Popen([sys.executable, "-m", "cli", "cluster", str(HDIGIT),
                             "--store", str(store_dir), "--json"], cwd=ROOT, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        while len(store.list("base-labels")) < n_groups // 2:
            if proc.poll() is not None:
                sys.exit("the run to kill ended first")
            time.sleep(0.05)
    finally:
        # The whole process group: the command and Prefect's embedded API server, which a
        # SIGKILL of the command alone would leave orphaned.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return len(store.list("base-labels"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="stores and split files (default: temp)")
    parser.add_argument("--skip-library", action="store_true",
                        help="do not compare with FastMICE.fit in this process")
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--sections", default="ABCD",
                        help="ABCD (default), or D alone (A, B and C run together)")
    parser.add_argument("--seeds", default="0",
                        help="seeds of section D, comma-separated (default: 0)")
    args = parser.parse_args()
    if not HDIGIT.exists():
        sys.exit(f"{HDIGIT} is absent: these figures need ../shared/datasets")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="fastmice-hdigit-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work directory {work}\n", flush=True)

    if "A" in args.sections or "B" in args.sections or "C" in args.sections:
        reference_runs(work, args)
    if "D" in args.sections:
        recluster_figures(work, [int(s) for s in args.seeds.split(",")])


def reference_runs(work: Path, args: argparse.Namespace) -> None:
    """Sections A, B and C (B and C compare their labels with A's first run)."""
    print("A. rerun and extend", flush=True)
    first, wall = fastmice_cli("cluster", HDIGIT, "--store", work / "A")
    reference = labels_of(first)
    show("cluster", first, wall)
    rerun, wall = fastmice_cli("cluster", HDIGIT, "--store", work / "A")
    show("cluster again", rerun, wall,
         identical=np.array_equal(labels_of(rerun), reference))
    extended, wall = fastmice_cli("extend", first["run_id"], "--groups", 10,
                                  "--store", work / "A")
    show("extend --groups 10", extended, wall)
    if not args.skip_library:
        from fastmice import FastMICE
        from pipeline.ingest import load_npz

        Xs, _ = load_npz(HDIGIT)
        start = time.time()
        library = FastMICE(10, random_state=0, n_jobs=2).fit(Xs).labels_
        print(f"{'FastMICE(10, random_state=0).fit':<34} | {time.time() - start:.1f} s | "
              f"identical to the pipeline: {np.array_equal(library, reference)}")

    print("\nB. SIGKILL halfway, then rerun", flush=True)
    finished = killed_run(work / "B")
    resumed, wall = fastmice_cli("cluster", HDIGIT, "--store", work / "B")
    show(f"rerun after kill ({finished} stored)", resumed, wall,
         identical=np.array_equal(labels_of(resumed), reference))

    if not args.skip_dask:
        print("\nC. Dask LocalCluster", flush=True)
        dask, wall = fastmice_cli("cluster", HDIGIT, "--store", work / "C", "--dask", "local")
        show("cluster --dask local", dask, wall,
             identical=np.array_equal(labels_of(dask), reference))


def recluster_figures(work: Path, seeds: list[int]) -> None:
    """Section D: recluster after a 90/10 split vs a fresh full run on the union, per seed."""
    print("\nD. recluster after new data (90/10 split)", flush=True)
    z = np.load(HDIGIT)
    views = sorted((k for k in z.files if k.startswith("view")), key=lambda k: int(k[4:]))
    y = z["labels"]
    order = np.random.default_rng(0).permutation(len(y))
    old, new = order[: int(0.9 * len(y))], order[int(0.9 * len(y)):]
    for name, rows in (("old90", old), ("new10", new), ("union", np.concatenate([old, new]))):
        np.savez(work / f"{name}.npz", labels=y[rows], **{v: z[v][rows] for v in views})
    differences = []
    for seed in seeds:
        common = ["--seed", seed, "--store", work / "D"]
        base, wall = fastmice_cli("cluster", work / "old90.npz", "--name", f"hd-s{seed}",
                                  *common)
        show(f"seed {seed}: cluster 90 %", base, wall)
        _, append_wall = fastmice_cli("append", f"hd-s{seed}", work / "new10.npz",
                                      "--store", work / "D")
        recluster, wall = fastmice_cli("recluster", f"hd-s{seed}", "--store", work / "D")
        show(f"seed {seed}: append 10 % + recluster", recluster, wall + append_wall,
             work=json.dumps(recluster["work"]))
        fresh, fresh_wall = fastmice_cli("cluster", work / "union.npz", "--name",
                                         f"hd-union-s{seed}", *common)
        show(f"seed {seed}: fresh full run on the union", fresh, fresh_wall)
        agreement = clustering_scores(labels_of(fresh), labels_of(recluster))["nmi"]
        difference = 100 * (recluster["scores"]["nmi"] - fresh["scores"]["nmi"])
        differences.append(difference)
        print(f"seed {seed}: recluster NMI {recluster['scores']['nmi']:.4f} vs fresh full run "
              f"{fresh['scores']['nmi']:.4f}: {difference:+.2f} NMI points; NMI between the "
              f"two labelings {agreement:.4f}; recluster {recluster['seconds']:.1f} s in the "
              f"flow ({wall + append_wall:.1f} s wall with append) vs fresh "
              f"{fresh['seconds']:.1f} s ({fresh_wall:.1f} s wall)", flush=True)
    print(f"\nrecluster - fresh, NMI points over seeds {seeds}: "
          f"{', '.join(f'{d:+.2f}' for d in differences)}; mean {np.mean(differences):+.2f}")


if __name__ == "__main__":
    main()
