"""fastmice at scale: time, memory and quality from 50,000 to 1,000,000 samples.

Generates its data itself (``benchmarks/scale_data.py``: clusters in a latent space seen
through a different random projection per view, plus noise; 4 views of 944/576/512/640
features, the shape of the paper's YTF sets) as folders of per-view float32 ``.npy`` files,
and times every run in its own process (wall seconds, peak resident memory from the
operating system, as ``/usr/bin/time -v`` reports it). Sections (``--sections``, all by
default but ``million``):

``n``         N = 50k, 100k, 200k, 400k (398,191) at k = 400: the library's
              ``FastMICE(k, n_jobs=-1).fit`` (seconds per stage) and the pipeline's
              ``fastmice cluster DIR --k K`` (embedded Prefect API, start-up included); the
              fitted exponent of time in N.
``k``         k = 50, 100, 200, 400, 800 at N = 100k (library): time against k.
``jobs``      n_jobs = 1 against -1 at 400k, k = 400 (library).
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
from scale_data import write_views_dir  # noqa: E402

YTF_N = 398_191
SECTIONS = ("n", "k", "jobs", "peers", "recluster", "refusal")
STAGES = ("read", "anchors", "search", "graph", "eigen", "kmeans", "consensus", "write")


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


def library(work: Path, folder: Path, k: int, n_jobs: int = -1) -> dict[str, Any]:
    """``FastMICE(k, n_jobs=...).fit`` on views read into memory, in a new process."""
    m = run_measured(f"fit-{folder.name}-{n_jobs}",
                     [sys.executable, __file__, "_fit", str(folder), str(k), str(n_jobs)],
                     _env(work), work, timeout=3600)
    return {**(m.output or {"error": Path(m.log).read_text()[-500:]}),
            "wall": round(m.seconds, 1), "peak_rss_gb": round(m.peak_rss_mb / 1024, 2)}


def _fit(folder: str, k: str, n_jobs: str) -> None:
    import fastmice
    from fastmice.metrics import clustering_scores

    started = time.perf_counter()
    paths = sorted(Path(folder).glob("view*.npy"), key=lambda p: int(p.stem[4:]))
    Xs, y = [np.load(p) for p in paths], np.load(Path(folder) / "labels.npy")
    read = time.perf_counter() - started
    started = time.perf_counter()
    with fastmice.record_stages() as stages:
        labels = fastmice.FastMICE(int(k), random_state=0, n_jobs=int(n_jobs)).fit(Xs).labels_
    seconds = time.perf_counter() - started
    print(json.dumps({"fit": round(seconds, 1), "read": round(read, 1),
                      "stages": {s: round(t, 1) for s, t in stages.items()},
                      "nmi": round(clustering_scores(y, labels)["nmi"], 4)}))


def cli(work: Path, label: str, *args: object) -> dict[str, Any]:
    """One ``fastmice`` command (``--json``) in a new process: its summary, wall and RSS."""
    command = [str(Path(sys.executable).parent / "fastmice"), *map(str, args), "--json",
               "--store", str(work / "store")]
    m = run_measured(label, command, _env(work), work, timeout=3600)
    out = m.output or {"error": Path(m.log).read_text()[-800:]}
    return {**out, "wall": round(m.seconds, 1), "peak_rss_gb": round(m.peak_rss_mb / 1024, 2),
            "exit": m.returncode}


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
    for name in ("jobs", "peers", "recluster", "million", "refusal"):
        if name in results:
            lines.append(f"{name}: {json.dumps(results[name], default=str)}\n")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "_fit":
        _fit(*sys.argv[2:5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated, of {', '.join((*SECTIONS, 'million'))}")
    parser.add_argument("--data-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "fastmice-scale",
                        help="where the generated data sets are kept between runs")
    parser.add_argument("--out", type=Path, help="also write the results as JSON")
    parser.add_argument("--sizes", type=lambda text: [int(n) for n in text.split(",")],
                        default=[50_000, 100_000, 200_000, YTF_N],
                        help="the N of section n (comma-separated)")
    args = parser.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(sections) - {*SECTIONS, "million"})
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
