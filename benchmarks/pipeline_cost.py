"""What the Prefect pipeline costs on top of the library, at the paper's scale.

Generates (once, cached in ``--data-dir``) a synthetic data set shaped like the paper's large
deep-feature sets -- 100,000 samples, 4 views of 944/576/512/640 features, k=100 -- as a
directory of per-view ``.npy`` files, then times the ``fastmice`` CLI in subprocesses, each
with ``--json`` and a fresh artifact store:

==========  ==================================================================================
F           the same ``cluster`` command on a tiny slice (``--tiny`` samples): Prefect's fixed
            start-up (import, embedded API, flow/task bookkeeping); measured after one untimed
            warm-up run, so the Prefect database already exists
T           the first ``fastmice cluster DIR --k 100 --groups 20``
R           the same command again on the same store (everything reused)
E           ``fastmice extend RUN --groups 10`` on T's run (20 -> 30 groups)
T30         a fresh 30-group run, for comparison with E
L           ``FastMICE(100, n_groups=20, random_state=0, n_jobs=2).fit(Xs)`` in one process
==========  ==================================================================================

Bars: ``R <= F + 0.1 (T - F)``; ``E <= 0.6 T30``; ``T <= 1.2 L + F``. Prints a markdown
table of times, peak RSS, ratios and pass/fail (``--json`` for JSON). Peak RSS is per
subprocess from ``os.wait4`` (the largest of the process and the children it reaped, e.g.
the embedded API server); with psutil installed, the peak sum over the live process tree
is sampled too.

The full size takes many minutes, ~2.1 GB of data (float64; half with ``--dtype float32``)
and twice that again for the two full-size stores in the work directory (deleted at the end
unless ``--keep``). Try it scaled down first::

    python benchmarks/pipeline_cost.py --n-samples 5000 --k 20
    python benchmarks/pipeline_cost.py                      # the full benchmark
    python benchmarks/pipeline_cost.py --ratios             # a session of commands on Hdigit
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA_FORMAT = "fastmice-pipeline-cost/1"

if str(REPO) not in sys.path:  # a checkout that is not installed: use it in place
    sys.path.insert(0, str(REPO))

from _measure import Measurement, run_measured  # noqa: E402  (beside this script)

# ---------------------------------------------------------------------------- data


def default_data_dir(n_samples: int, dtype: str) -> Path:
    """``/tmp/fastmice-100k`` for the full size; a size- and dtype-specific folder otherwise."""
    size = f"{n_samples // 1000}k" if n_samples % 1000 == 0 else str(n_samples)
    suffix = "" if dtype == "float64" else f"-{dtype}"
    return Path(tempfile.gettempdir()) / f"fastmice-{size}{suffix}"


def ensure_data(
    directory: Path, n_samples: int, k: int, dims: list[int], dtype: str, seed: int
) -> tuple[Path, float]:
    """Write the data set into ``directory`` unless the same one is already there.

    Returns
    -------
    directory : Path
        Holds ``view{v}.npy`` of shape (n_samples, dims[v]), ``labels.npy`` and ``meta.json``.
    seconds : float
        Generation time (0.0 when cached).
    """
    from fastmice.datasets import make_multiview_blobs
    from pipeline.ingest import save_views_dir

    meta = {
        "format": DATA_FORMAT,
        "n_samples": n_samples,
        "n_clusters": k,
        "n_features": dims,
        "dtype": dtype,
        "seed": seed,
    }
    meta_path = directory / "meta.json"
    if meta_path.exists() and json.loads(meta_path.read_text()) == meta:
        return directory, 0.0
    if meta_path.exists():
        raise ValueError(
            f"--data-dir {directory} holds a different data set ({meta_path.read_text()}); "
            f"choose another --data-dir or delete it."
        )
    start = time.perf_counter()
    Xs, y = make_multiview_blobs(
        n_samples, len(dims), k, dims, random_state=seed, dtype=np.dtype(dtype)
    )
    save_views_dir(directory, Xs, y, overwrite=True)
    meta_path.write_text(json.dumps(meta))
    return directory, time.perf_counter() - start


def ensure_tiny(directory: Path, n_tiny: int) -> Path:
    """The first ``n_tiny`` samples of the data set in ``directory``, as ``directory/tiny-N``."""
    from pipeline.ingest import load_views, save_views_dir

    tiny = directory / f"tiny-{n_tiny}"
    if not (tiny / "labels.npy").exists():
        Xs, y = load_views(directory, mmap_mode="r")
        save_views_dir(tiny, [np.array(X[:n_tiny]) for X in Xs], y[:n_tiny], overwrite=True)
    return tiny


# ---------------------------------------------------------------------------- library


def library_fit(data_dir: Path, k: int, n_groups: int, seed: int,
                n_jobs: int | None) -> dict[str, float]:
    """Load the views and time ``FastMICE(...).fit`` in this process (the library baseline)."""
    from fastmice import FastMICE
    from pipeline.ingest import load_views

    start = time.perf_counter()
    Xs, _ = load_views(data_dir)
    loaded = time.perf_counter()
    FastMICE(n_clusters=k, n_groups=n_groups, random_state=seed, n_jobs=n_jobs).fit(Xs)
    done = time.perf_counter()
    return {"load_seconds": loaded - start, "fit_seconds": done - loaded, "n_jobs": n_jobs}


# ---------------------------------------------------------------------------- main


def _bar(name: str, value: float, limit: float, expression: str) -> dict[str, Any]:
    return {
        "bar": name,
        "value": round(value, 2),
        "limit": round(limit, 2),
        "expression": expression,
        "passed": bool(value <= limit),
    }


def _environment(work: Path, api_url: str | None) -> dict[str, str]:
    """The commands' environment: their own PREFECT_HOME, and a server if one is given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_URL")}
    env.update(
        PREFECT_HOME=str(work / "prefect-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    """Run every measurement; return the report (measurements, ratios, bars)."""
    dims = [int(d) for d in args.dims.split(",")]
    data_dir = args.data_dir or default_data_dir(args.n_samples, args.dtype)
    data_dir, gen_seconds = ensure_data(
        data_dir, args.n_samples, args.k, dims, args.dtype, args.seed
    )
    tiny_dir = ensure_tiny(data_dir, args.tiny)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="fastmice-cost-"))
    (work / "logs").mkdir(parents=True, exist_ok=True)
    env = _environment(work, args.api_url)
    cli = [sys.executable, "-m", "cli"] if args.cli is None else args.cli.split()
    k_tiny = max(2, min(args.k, args.tiny // 20))

    def cluster(label: str, data: Path, store: str, k: int, groups: int) -> Measurement:
        return measure(label, [*cli, "cluster", str(data), "--k", str(k), "--groups",
                               str(groups), "--store", str(work / store), "--seed",
                               str(args.seed), "--json"])

    def measure(label: str, cmd: list[str]) -> Measurement:
        m = run_measured(label, cmd, env, work / "logs", args.timeout)
        status = "ok" if m.returncode == 0 else f"FAILED rc={m.returncode}, see {m.log}"
        print(f"  {label:<10} {m.seconds:8.1f} s  {m.peak_rss_mb:7.0f} MB  {status}",
              file=sys.stderr, flush=True)
        if m.returncode != 0:
            raise RuntimeError(f"{label} failed (rc={m.returncode}); log: {m.log}")
        return m

    print(f"data: {data_dir} ({args.n_samples} x {dims}, {args.dtype}; generated in "
          f"{gen_seconds:.1f} s); work dir: {work}", file=sys.stderr, flush=True)
    runs: dict[str, Measurement] = {}
    runs["warmup"] = cluster("warmup", tiny_dir, "store-warmup", k_tiny, args.groups)
    runs["F"] = cluster("F", tiny_dir, "store-tiny", k_tiny, args.groups)
    runs["T"] = cluster("T", data_dir, "store-main", args.k, args.groups)
    runs["R"] = cluster("R", data_dir, "store-main", args.k, args.groups)
    runs["E"] = measure("E", [*cli, "extend", runs["T"].output["run_id"], "--groups",
                              str(args.extend_groups), "--store", str(work / "store-main"),
                              "--json"])
    runs["T30"] = cluster("T30", data_dir, "store-fresh", args.k,
                          args.groups + args.extend_groups)
    runs["L"] = measure("L", [sys.executable, str(Path(__file__).resolve()), "--library-only",
                              "--data-dir", str(data_dir), "--k", str(args.k), "--groups",
                              str(args.groups), "--seed", str(args.seed), "--library-jobs",
                              str(args.library_jobs)])
    if not args.keep:
        for store in work.glob("store-*"):
            shutil.rmtree(store, ignore_errors=True)
    data = {"dir": str(data_dir), "n_samples": args.n_samples, "n_features": dims,
            "n_clusters": args.k, "dtype": args.dtype, "generate_seconds": gen_seconds,
            "tiny": args.tiny, "tiny_k": k_tiny}
    return _report(args, data, work, runs)


def _report(args: argparse.Namespace, data: dict[str, Any], work: Path,
            runs: dict[str, Measurement]) -> dict[str, Any]:
    """Ratios and bars of the measured runs."""
    F, T, R, E = (runs[x].seconds for x in ("F", "T", "R", "E"))
    T30 = runs["T30"].seconds
    L = runs["L"].output["fit_seconds"]
    total = args.groups + args.extend_groups
    bars = [
        _bar("rerun", R, F + 0.1 * (T - F), "R <= F + 0.1 (T - F)"),
        _bar("extend", E, 0.6 * T30, f"E (+{args.extend_groups}) <= 0.6 T{total}"),
        _bar("pipeline vs library", T, 1.2 * L + F, "T <= 1.2 L + F"),
    ]
    return {
        "data": data,
        "mode": "server " + args.api_url if args.api_url else "ephemeral API",
        "work_dir": str(work),
        "runs": {k: asdict(m) for k, m in runs.items()},
        "library": runs["L"].output,
        "ratios": {
            "R/T": R / T,
            "(R-F)/(T-F)": (R - F) / (T - F) if T > F else None,
            "E/T30": E / T30,
            "(T-F)/L": (T - F) / L if L else None,
            "T/L": T / L if L else None,
        },
        "bars": bars,
        "passed": all(b["passed"] for b in bars),
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as markdown tables: runs, then bars."""
    d = report["data"]
    lines = [
        f"Data: {d['n_samples']} samples, views {d['n_features']}, k={d['n_clusters']}, "
        f"{d['dtype']}; Prefect: {report['mode']}.",
        "",
        "| run | what | seconds | peak RSS (MB) | tree RSS (MB) |",
        "|---|---|---:|---:|---:|",
    ]
    what = {
        "warmup": f"tiny cluster ({d['tiny']} samples), untimed warm-up",
        "F": f"tiny cluster ({d['tiny']} samples, k={d['tiny_k']}): fixed cost",
        "T": "cluster, first run",
        "R": "cluster, rerun (same store)",
        "E": "extend the run of T",
        "T30": "cluster, fresh run with the extended group count",
        "L": "library FastMICE.fit in one process (whole process)",
    }
    for key, run in report["runs"].items():
        tree = "" if run["tree_rss_mb"] is None else f"{run['tree_rss_mb']:.0f}"
        lines.append(f"| {key} | {what.get(key, '')} | {run['seconds']:.1f} | "
                     f"{run['peak_rss_mb']:.0f} | {tree} |")
    lib = report["library"]
    lines.append(f"| L fit | FastMICE.fit only (load {lib['load_seconds']:.1f} s excluded) | "
                 f"{lib['fit_seconds']:.1f} | | |")
    lines += ["", "| ratio | value |", "|---|---:|"]
    lines += [f"| {k} | {'' if v is None else f'{v:.3f}'} |" for k, v in report["ratios"].items()]
    lines += ["", "| bar | measured (s) | limit (s) | result |", "|---|---:|---:|---|"]
    for b in report["bars"]:
        lines.append(f"| {b['expression']} | {b['value']:.1f} | {b['limit']:.1f} | "
                     f"{'pass' if b['passed'] else '**FAIL**'} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-samples", type=int, default=100_000)
    p.add_argument("--k", type=int, default=100, help="clusters (default 100)")
    p.add_argument("--dims", default="944,576,512,640", help="features per view")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--groups", type=int, default=20)
    p.add_argument("--extend-groups", type=int, default=10)
    p.add_argument("--library-jobs", type=int, default=2,
                   help="n_jobs of the library baseline L (default 2: the pipeline's thread "
                   "pool has 2 workers)")
    p.add_argument("--tiny", type=int, default=200, help="samples of the fixed-cost run")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="cached data (default /tmp/fastmice-100k for the full size)")
    p.add_argument("--work-dir", type=Path, default=None,
                   help="stores, PREFECT_HOME and logs (default: a new temp dir)")
    p.add_argument("--api-url", default=None,
                   help="PREFECT_API_URL of a running server (default: the ephemeral API)")
    p.add_argument("--cli", default=None,
                   help="the fastmice command (default: this python -m cli)")
    p.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per command")
    p.add_argument("--keep", action="store_true",
                   help="keep the artifact stores in the work dir (default: delete them)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--library-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ratios", action="store_true",
                   help="instead: the fixed-cost split and the ratios of a session of "
                        "commands on Hdigit (benchmarks/_ratios.py)")
    p.add_argument("--repeats", type=int, default=3, help="A/B pairs with --ratios")
    args = p.parse_args(argv)
    if args.n_samples < args.tiny or args.tiny < 20:
        p.error(f"--tiny={args.tiny} must be >= 20 and <= --n-samples={args.n_samples}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns 0 when every bar passes."""
    args = parse_args(argv)
    if args.ratios:
        from _ratios import main as ratios_main

        return ratios_main(args.repeats, args.keep)
    if args.library_only:
        print(json.dumps(library_fit(args.data_dir, args.k, args.groups, args.seed,
                                     args.library_jobs)))
        return 0
    report = benchmark(args)
    print(json.dumps(report, indent=2) if args.json else markdown(report))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
