"""fastmice at scale: time, memory and quality from 50,000 to 1,000,000 samples.

Generates its data itself (``benchmarks/scale_data.py``: clusters in a latent space seen
through a different random projection per view, plus noise; 4 views of 944/576/512/640
features, the shape of the paper's YTF sets) as folders of per-view float32 ``.npy`` files,
and times every run in its own process (wall seconds, peak resident memory from the
operating system, as ``/usr/bin/time -v`` reports it). Sections (``--sections``, all by
default but ``threads``, ``groups``, ``dask`` and ``million``):

``n``         N = 50k, 100k, 200k, 400k (398,191) at k = 400: the library's
              ``FastMICE(k, n_jobs=-1).fit`` (seconds per stage) and the pipeline's
              ``fastmice cluster DIR --k K`` (embedded Prefect API, start-up included); the
              fitted exponent of time in N.
``k``         k = 50, 100, 200, 400, 800 at N = 100k (library): time against k.
``jobs``      n_jobs = 1 against -1 at 400k, k = 400 (library).
``threads``   the thread-scaling table: ``n_jobs`` = J for J in ``--threads`` (default 1, 2,
              4, 8, 16 up to the machine's cores) at 400k, k = 400 (``--threads-n`` for
              another N), library: one JSON line per run on stdout (wall, process CPU
              seconds, busy = CPU / (wall x min(J, cores)), stage thread-seconds and stage
              CPU seconds, the share of the wall during which 0, 1, 2... of the fit's
              threads were runnable, peak RSS, NMI, a hash of the labels, the load), and
              what the serial share predicts for 16 threads.
``groups``    peak RSS with at most 1, 2, 4 view groups at once (``--groups``) at 100,000
              samples (``--groups-n``), k = 400, library: the views', up to the consensus and
              overall; the bytes a sample each further group adds (``fastmice.groups_within``).
``dask``      the pipeline on 2 Dask worker processes (``--dask local``) against 2 task
              threads at ``--dask-n`` samples, then weak scaling: ``--dask-per-worker``
              samples a worker on 1, 2, 4 workers; one JSON line a run (wall, CPU of the
              command and its worker processes, RSS, phases, stored bytes a sample, labels).
``peers``     200,000 x 256/128/64/32, k = 20 (20 clusters merged into different pairs in every
              view): fastmice against secuer, landmark spectral clustering and mini-batch
              k-means (``benchmarks/peers.py``; secuer in a virtual environment made here).
``recluster`` 398,191 + 40,000 rows: ``cluster`` of the first, ``append`` of the rest and
              ``recluster``, against a fresh ``cluster`` of the union.
``million``   1,000,000 samples (10.7 GB of float32 files) through the pipeline: peak memory.
``refusal``   runs the memory estimate refuses (``--memory-limit``).

    python benchmarks/scale.py                       # about half an hour on 2 cores
    python benchmarks/scale.py --sections n,jobs --out scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

from _measure import run_measured  # noqa: E402
from _scale_runs import _data, _env, cli, library, run_fit  # noqa: E402

YTF_N = 398_191
SECTIONS = ("n", "k", "jobs", "peers", "recluster", "refusal")
OPT_IN = ("threads", "groups", "dask", "million")  # asked for by name
STAGES = ("read", "anchors", "search", "graph", "eigen", "kmeans", "consensus", "write")


def _exponent(xs: list[float], ys: list[float]) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def section_n(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    for n in args.sizes:
        folder = _data(root, "latent", n, 400)
        lib = library(work, folder, 400)
        pipe = cli(work, f"cluster-{n}", "cluster", folder, "--k", 400, "--name", f"n{n}")
        rows.append({"n": n, "k": 400, "library": lib, "pipeline": pipe})
        print(f"  N={n}: library {lib.get('fit')} s, pipeline {pipe['wall']} s", file=sys.stderr)
    ns = [r["n"] for r in rows]
    return {"rows": rows,
            "exponent_library": _exponent(ns, [r["library"]["fit"] for r in rows]),
            "exponent_pipeline": _exponent(ns, [r["pipeline"]["wall"] for r in rows])}


def section_k(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    for k in (50, 100, 200, 400, 800):
        rows.append({"n": 100_000, "k": k,
                     "library": library(work, _data(root, "latent", 100_000, k), k)})
        print(f"  k={k}: {rows[-1]['library'].get('fit')} s", file=sys.stderr)
    ks = [r["k"] for r in rows]
    return {"rows": rows, "exponent": _exponent(ks, [r["library"]["fit"] for r in rows])}


def section_jobs(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    folder = _data(root, "latent", YTF_N, 400)
    one, every = library(work, folder, 400, 1), library(work, folder, 400, -1)
    return {"n_jobs=1": one, "n_jobs=-1": every, "ratio": round(every["fit"] / one["fit"], 3)}


def predicted_wall(run: dict[str, Any], threads: int, cores: int) -> float | None:
    """The wall on ``cores`` cores that a run's serial share predicts (Amdahl): the share of
    its wall with at most one runnable thread stays, the rest divides by cores / threads."""
    shares = {int(n): share for n, share in (run.get("runnable") or {}).items()}
    if not shares or "fit" not in run or threads == 1:  # one thread: nothing to tell
        return None
    serial = sum(share for n, share in shares.items() if n <= 1)
    width = min(threads, os.cpu_count() or 1)
    return round(run["fit"] * (serial + (1 - serial) * width / cores), 1)


def section_threads(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    folder = _data(root, "latent", args.threads_n, 400)
    rows = []
    for threads in args.threads:
        run = {"n": args.threads_n, "k": 400, "n_jobs": threads, "cores": os.cpu_count(),
               **library(work, folder, 400, threads, mode=args.mode)}
        run["predicted_16_cores"] = predicted_wall(run, threads, 16)
        print(json.dumps(run), flush=True)  # one line a run, as it comes
        rows.append(run)
    same = len({r.get("labels_sha") for r in rows}) == 1
    return {"rows": rows, "labels_identical": same}


def section_groups(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Peak RSS with at most 1, 2, 4... view groups at once (``--groups``) at ``--groups-n``
    samples, k = 400, n_jobs = the largest cap: the memory each further group adds (the
    slope of the peak RSS up to the consensus against the cap)."""
    folder = _data(root, "latent", args.groups_n, 400)
    rows, n_jobs = [], args.groups_jobs or max(args.groups)
    for cap in args.groups:
        run = {"n": args.groups_n, "k": 400, "n_jobs": n_jobs, "groups_at_once": cap,
               **library(work, folder, 400, n_jobs, cap, mode=args.mode)}
        print(json.dumps(run), flush=True)
        rows.append(run)
    caps = [r["groups_at_once"] for r in rows]
    slope = float(np.polyfit(caps, [(r.get("rss_groups_gb") or 0) * 2**30 for r in rows],
                             1)[0]) if len(set(caps)) > 1 else None
    return {"rows": rows, "labels_identical": len({r.get("labels_sha") for r in rows}) == 1,
            "bytes_per_sample_per_group": None if slope is None else round(slope / args.groups_n)}


def _pipeline_run(work: Path, label: str, folder: Path, workers: int,
                  dask: bool) -> dict[str, Any]:
    """``fastmice cluster`` of ``folder`` (k = 400) in its own store and Prefect home, on
    ``workers`` task threads or Dask LocalCluster worker processes: wall, CPU, RSS, the
    group and consensus phases, the stored bytes per artifact kind, a hash of the labels."""
    import hashlib

    import pyarrow.parquet as pq

    own = work / label
    own.mkdir()
    run = cli(own, label, "cluster", folder, "--k", 400, "--n-jobs", workers,
              *(["--dask", "local"] if dask else []))
    n = run.get("n_samples") or 0
    labels = None
    if run.get("labels_path"):
        table = pq.read_table(run["labels_path"])
        labels = table["label"].to_numpy()[np.argsort(table["sample_id"].to_numpy())]
    stored = {kind.name: sum(f.stat().st_size for f in kind.rglob("*") if f.is_file())
              for kind in sorted((own / "store").glob("*")) if kind.is_dir()}
    out = {"label": label, "n": n, "workers": workers, "dask": dask, "wall": run["wall"],
           "cpu": run["cpu"], "peak_rss_gb": run["peak_rss_gb"],
           "tree_rss_gb": run["tree_rss_gb"], "timings": run.get("timings"),
           "stages": run.get("stages"), "nmi": round((run.get("scores") or {}).get("nmi", 0), 4),
           "labels_sha": None if labels is None else hashlib.sha256(
               np.ascontiguousarray(labels, np.int64).tobytes()).hexdigest()[:16],
           "stored_bytes_per_sample": {k: round(v / max(n, 1), 1) for k, v in stored.items()},
           "samples_per_worker_second": round(n / (workers * run["wall"]), 1) if n else None,
           "cpu_us_per_sample": round(1e6 * run["cpu"] / n, 1) if n else None,
           "load": round(os.getloadavg()[0], 2), "exit": run["exit"],
           **({"error": run["error"]} if "error" in run else {})}
    print(json.dumps(out), flush=True)  # one line a run, as it comes
    shutil.rmtree(own / "store", ignore_errors=True)
    return out


def section_dask(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The pipeline on Dask: ``--dask local`` on 2 worker processes against 2 task threads
    at ``--dask-n`` samples; then weak scaling, ``--dask-per-worker`` samples a worker on
    1, 2, 4 worker processes (``--dask-weak``; k = 400)."""
    folder = _data(root, "latent", args.dask_n, 400)
    threads = _pipeline_run(work, "threads-2", folder, 2, dask=False)
    dask = _pipeline_run(work, "dask-2", folder, 2, dask=True)
    weak = [_pipeline_run(work, f"weak-{w}", _data(root, "latent", w * args.dask_per_worker, 400),
                          w, dask=True) for w in args.dask_weak]
    return {"threads": threads, "dask": dask, "dask_over_threads": round(
        dask["wall"] / threads["wall"], 3), "cpu_dask_over_threads": round(
        dask["cpu"] / threads["cpu"], 3), "labels_identical": dask["labels_sha"] ==
        threads["labels_sha"], "weak": weak}


def _peers_python(work: Path) -> str:
    venv = Path(tempfile.gettempdir()) / "fastmice-peers-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "secuer", "pandas",
                        "scanpy", "python-igraph", "louvain", "numba", "scikit-learn"],
                       check=True)
    return str(python)


def section_peers(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    folder = _data(root, "paired", 200_000, 20)
    rows = {"fastmice": library(work, folder, 20)}
    python = _peers_python(work)
    for method in ("secuer", "lsc", "minibatch-kmeans"):
        m = run_measured(f"peer-{method}",
                         [python, str(REPO / "benchmarks" / "peers.py"), method, str(folder),
                          "20"], _env(work), work, timeout=3600)
        rows[method] = {**(m.output or {"error": Path(m.log).read_text()[-500:]}),
                        "wall": round(m.seconds, 1),
                        "peak_rss_gb": round(m.peak_rss_mb / 1024, 2)}
        print(f"  {method}: {rows[method].get('seconds')} s", file=sys.stderr)
    return rows


def section_recluster(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    total = YTF_N + 40_000
    first = _data(root, "latent", total, 400, rows=(0, YTF_N))
    batch = _data(root, "latent", total, 400, rows=(YTF_N, total))
    union = _data(root, "latent", total, 400)
    fresh = cli(work, "fresh-union", "cluster", union, "--k", 400, "--name", "union")
    base = cli(work, "cluster-first", "cluster", first, "--k", 400, "--name", "grow")
    append = cli(work, "append", "append", "grow", batch)
    recluster = cli(work, "recluster", "recluster", "grow")
    incremental = append["wall"] + recluster["wall"]
    return {"fresh": fresh, "first": base, "append": append, "recluster": recluster,
            "ratio": round(incremental / fresh["wall"], 3),
            "nmi_gap": round(recluster["scores"]["nmi"] - fresh["scores"]["nmi"], 4)}


def section_million(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    folder = _data(root, "latent", 1_000_000, 400)
    return {"pipeline": cli(work, "cluster-1m", "cluster", folder, "--k", 400, "--name", "m")}


def section_refusal(work: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    mfeat = REPO.parent / "shared" / "datasets" / "mfeat.npz"
    cases = {"mfeat k=1500, 2G": ["cluster", mfeat, "--k", 1500, "--memory-limit", "2G"],
             "mfeat k=1500": ["cluster", mfeat, "--k", 1500, "--name", "mfeat1500"]}
    if (root / "latent-1000000-k400").exists():
        cases["1M, 40 groups, 3G"] = ["cluster", root / "latent-1000000-k400", "--k", 400,
                                      "--groups", 40, "--memory-limit", "3G"]
    out = {}
    for label, command in cases.items():
        result = cli(work, "refusal-" + label.replace(" ", "_").replace(",", ""), *command)
        out[label] = {"exit": result["exit"], "error": result.get("error"),
                      "wall": result["wall"], "peak_rss_gb": result["peak_rss_gb"],
                      "nmi": (result.get("scores") or {}).get("nmi")}
    return out


def report(results: dict[str, Any]) -> str:
    """The results as markdown tables."""
    lines = []
    if "n" in results:
        lines += ["| N | k | library s | " + " | ".join(STAGES[1:7]) + " | lib RSS GB | NMI | "
                  "pipeline s | pipe RSS GB | pipe NMI |", "|" + "---|" * 15]
        for r in results["n"]["rows"]:
            lib, pipe = r["library"], r["pipeline"]
            stages = [f"{lib.get('stages', {}).get(s, 0):.1f}" for s in STAGES[1:7]]
            lines.append(f"| {r['n']} | {r['k']} | {lib.get('fit')} | " + " | ".join(stages)
                         + f" | {lib['peak_rss_gb']} | {lib.get('nmi')} | {pipe['wall']} | "
                         f"{pipe['peak_rss_gb']} | {(pipe.get('scores') or {}).get('nmi')} |")
        lines.append(f"\ntime ~ N^{results['n']['exponent_library']:.2f} (library), "
                     f"N^{results['n']['exponent_pipeline']:.2f} (pipeline)\n")
    if "k" in results:
        lines += ["| N | k | library s | NMI |", "|---|---|---|---|"]
        lines += [f"| {r['n']} | {r['k']} | {r['library'].get('fit')} | "
                  f"{r['library'].get('nmi')} |" for r in results["k"]["rows"]]
        lines.append(f"\ntime ~ k^{results['k']['exponent']:.2f}\n")
    if "threads" in results:
        lines += ["| n_jobs | wall s | CPU s | busy | serial share | predicted 16 cores s | "
                  "peak RSS GB | NMI | search | kmeans | eigen | anchors | consensus |",
                  "|" + "---|" * 13]
        for r in results["threads"]["rows"]:
            shares = {int(n): v for n, v in (r.get("runnable") or {}).items()}
            serial = round(sum(v for n, v in shares.items() if n <= 1), 3)
            stages = [f"{r.get('stages', {}).get(s, 0):.1f}"
                      for s in ("search", "kmeans", "eigen", "anchors", "consensus")]
            lines.append(f"| {r['n_jobs']} | {r.get('fit')} | {r.get('cpu')} | "
                         f"{r.get('busy')} | {serial} | {r.get('predicted_16_cores')} | "
                         f"{r['peak_rss_gb']} | {r.get('nmi')} | " + " | ".join(stages) + " |")
        lines.append(f"\nlabels identical: {results['threads']['labels_identical']}\n")
    if "groups" in results:
        lines += ["| groups at once | n_jobs | wall s | CPU s | RSS views GB | RSS to the "
                  "consensus GB | peak RSS GB | NMI | labels |", "|" + "---|" * 9]
        lines += [f"| {r['groups_at_once']} | {r['n_jobs']} | {r.get('fit')} | {r.get('cpu')} | "
                  f"{r.get('rss_views_gb')} | {r.get('rss_groups_gb')} | {r['peak_rss_gb']} | "
                  f"{r.get('nmi')} | {r.get('labels_sha')} |"
                  for r in results["groups"]["rows"]]
        lines.append(f"\nlabels identical: {results['groups']['labels_identical']}; "
                     f"{results['groups']['bytes_per_sample_per_group']} bytes per sample for "
                     f"each further group\n")
    if "dask" in results:
        d = results["dask"]
        lines += ["| run | N | workers | wall s | CPU s | CPU us/sample | samples/worker/s | "
                  "groups s | consensus s | tree RSS GB | NMI |", "|" + "---|" * 11]
        for r in [d["threads"], d["dask"], *d["weak"]]:
            t = r.get("timings") or {}
            lines.append(f"| {r['label']} | {r['n']} | {r['workers']} | {r['wall']} | "
                         f"{r['cpu']} | {r['cpu_us_per_sample']} | "
                         f"{r['samples_per_worker_second']} | {t.get('groups')} | "
                         f"{t.get('consensus')} | {r['tree_rss_gb']} | {r['nmi']} |")
        lines.append(f"\nDask / threads wall {d['dask_over_threads']}, CPU "
                     f"{d['cpu_dask_over_threads']}; labels identical: {d['labels_identical']}\n")
    for name in ("jobs", "peers", "recluster", "million", "refusal"):
        if name in results:
            lines.append(f"{name}: {json.dumps(results[name], default=str)}\n")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "_fit":
        run_fit(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated, of {', '.join((*SECTIONS, *OPT_IN))}")
    parser.add_argument("--data-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "fastmice-scale",
                        help="where the generated data sets are kept between runs")
    parser.add_argument("--out", type=Path, help="also write the results as JSON")
    parser.add_argument("--threads", type=lambda text: [int(n) for n in text.split(",")],
                        default=[j for j in (1, 2, 4, 8, 16) if j <= (os.cpu_count() or 1)],
                        help="the n_jobs of section threads (comma-separated)")
    parser.add_argument("--threads-n", type=int, default=YTF_N,
                        help="the N of section threads")
    parser.add_argument("--mode", choices=("paper", "best"), default="paper",
                        help="the library's mode in sections threads and groups")
    parser.add_argument("--groups", type=lambda text: [int(n) for n in text.split(",")],
                        default=[1, 2, 4], help="the groups at once of section groups")
    parser.add_argument("--groups-n", type=int, default=100_000, help="the N of section groups")
    parser.add_argument("--groups-jobs", type=int,
                        help="the n_jobs of section groups (default: the largest cap)")
    parser.add_argument("--dask-n", type=int, default=100_000,
                        help="the N of section dask's threads-against-Dask runs")
    parser.add_argument("--dask-per-worker", type=int, default=25_000,
                        help="samples per worker process of section dask's weak scaling")
    parser.add_argument("--dask-weak", type=lambda text: [int(n) for n in text.split(",") if n],
                        default=[1, 2, 4],
                        help="worker processes of section dask's weak scaling ('' for none)")
    parser.add_argument("--sizes", type=lambda text: [int(n) for n in text.split(",")],
                        default=[50_000, 100_000, 200_000, YTF_N],
                        help="the N of section n (comma-separated)")
    args = parser.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(sections) - {*SECTIONS, *OPT_IN})
    if unknown:
        parser.error(f"unknown sections {unknown}")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="fastmice-scale-") as tmp:
        for name in sections:
            work = Path(tmp) / name
            work.mkdir()
            print(f"{name}:", file=sys.stderr)
            started = time.perf_counter()
            results[name] = globals()[f"section_{name}"](work, args.data_dir, args)
            results[name]["section_seconds"] = round(time.perf_counter() - started)
            shutil.rmtree(work, ignore_errors=True)  # its store: the disk is needed next
            if args.out:
                args.out.write_text(json.dumps(results, indent=1, default=str))
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
