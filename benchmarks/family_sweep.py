"""Methods on the generated family (``benchmarks/families.py``): NMI per point, a summary per
method, and NMI against the per-view signal as a plot.

A method is ``paper`` or ``best`` (``fastmice.FastMICE(k, metric="auto", mode=...,
n_jobs=2)``), ``best:FIELD=VALUE,...`` (the best mode with some ``BestChoices`` changed, as
in ``benchmarks/best_ablation.py``), ``concat-kmeans`` (scikit-learn ``KMeans(k,
n_init=10)`` on the views side by side as they are; sparse views stay sparse) or
``concat-spectral`` (scikit-learn ``SpectralClustering(k, affinity="nearest_neighbors")``
on the same concatenation up to 3,000 samples; above that the landmark spectral clustering
of ``benchmarks/peers.py``, 1,000 landmarks). Every method runs on every point once per
seed, methods alternating on each point and seed (a busy machine slows all alike).

Usage, from the repository root::

    python benchmarks/family_sweep.py --part design --max-samples 5000 \\
        --json design.json --plot signal.png
    python benchmarks/family_sweep.py --part confirmation --methods paper,best:weighting=none
    python benchmarks/family_sweep.py --part confirmation --redraw 7919   # fresh data
    python benchmarks/family_sweep.py --plot signal.png --from-json design.json,conf.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from families import PARTS as FAMILY_PARTS
from families import FamilyPoint, make_point
from relations import PARTS as RELATION_PARTS

PARTS = FAMILY_PARTS | RELATION_PARTS

METHODS = ("paper", "best", "concat-kmeans", "concat-spectral")
SPECTRAL_MAX_SAMPLES = 3000  # the dense N x N spectral clustering up to here
SLACK = 0.01  # "more than 1 NMI point below"


def concatenate(Xs: list) -> np.ndarray | sp.csr_matrix:
    """The views side by side, shape (n_samples, sum of d_v): CSR if any view is sparse."""
    if any(sp.issparse(X) for X in Xs):
        return sp.hstack([sp.csr_matrix(X, dtype=np.float64) for X in Xs]).tocsr()
    return np.hstack([np.asarray(X, dtype=np.float64) for X in Xs])


def _concat_spectral(X, k: int, seed: int) -> np.ndarray:
    if X.shape[0] <= SPECTRAL_MAX_SAMPLES:
        from sklearn.cluster import SpectralClustering

        return SpectralClustering(k, affinity="nearest_neighbors",
                                  n_neighbors=min(10, X.shape[0] - 1),
                                  random_state=seed).fit_predict(X)
    from peers import landmark_spectral

    return landmark_spectral(X, k, seed)


def run_method(Xs: list, y: np.ndarray, k: int, method: str, seed: int,
               n_jobs: int = 2) -> tuple[float, float]:
    """NMI (max-normalised) and seconds of one method on one data set.

    Parameters
    ----------
    Xs : list of ndarray or csr_matrix, each of shape (n_samples, d_v)
    y : ndarray of shape (n_samples,)
    k : int
        The number of clusters every method is given.
    method : str
        ``paper``, ``best``, ``best:FIELD=VALUE,...``, ``concat-kmeans`` or
        ``concat-spectral``.
    """
    from sklearn.metrics import normalized_mutual_info_score

    if method.startswith(("paper", "best")):
        from best_ablation import parse_config, run_one

        mode, choices = parse_config(method)
        return run_one(Xs, y, k, mode, choices, seed, n_jobs)
    started = time.perf_counter()
    X = concatenate(Xs)
    if method == "concat-kmeans":
        from sklearn.cluster import KMeans

        labels = KMeans(k, n_init=10, random_state=seed).fit_predict(X)
    elif method == "concat-spectral":
        labels = _concat_spectral(X, k, seed)
    else:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS} "
                         f"or best:FIELD=VALUE,...")
    seconds = time.perf_counter() - started
    return float(normalized_mutual_info_score(y, labels, average_method="max")), seconds


def run_methods(points: list[FamilyPoint], methods: list[str], seeds: list[int],
                n_jobs: int = 2, log=sys.stderr) -> list[dict]:
    """Every method on every point once per seed.

    Returns
    -------
    list of dict
        One row per (point, method, seed): ``{"point", "method", "seed", "nmi",
        "seconds"}`` (``nmi`` and ``seconds`` None and an ``"error"`` when the method
        failed).
    """
    rows = []
    for p in points:
        Xs, y = make_point(p)
        for seed in seeds:
            for method in methods:
                row = {"point": p.name, "method": method, "seed": seed}
                try:
                    nmi, seconds = run_method(Xs, y, p.n_clusters, method, seed, n_jobs)
                    row |= {"nmi": round(nmi, 4), "seconds": round(seconds, 3)}
                except Exception as error:
                    row |= {"nmi": None, "seconds": None,
                            "error": f"{type(error).__name__}: {error}"}
                rows.append(row)
                if log is not None:
                    print(f"{p.name} seed {seed} {method}: {row['nmi']} "
                          f"({row['seconds']} s){' ' + row['error'] if 'error' in row else ''}",
                          file=log, flush=True)
    return rows


def mean_table(rows: list[dict]) -> dict[str, dict[str, float | None]]:
    """``{point: {method: mean NMI over seeds (None if any seed failed)}}``."""
    table: dict[str, dict[str, list]] = {}
    for r in rows:
        table.setdefault(r["point"], {}).setdefault(r["method"], []).append(r["nmi"])
    return {p: {m: None if None in v else float(np.mean(v)) for m, v in by.items()}
            for p, by in table.items()}


def summarise(rows: list[dict]) -> dict[str, dict]:
    """Per method: mean NMI, points more than 1 NMI point below concat-kmeans and below the
    paper mode (with their names), and the seconds, over the points every method ran on."""
    table = mean_table(rows)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    common = [p for p, by in table.items() if all(by.get(m) is not None for m in methods)]
    seconds = {}
    for r in rows:
        if r["point"] in common:
            seconds[r["method"]] = seconds.get(r["method"], 0.0) + (r["seconds"] or 0.0)
    out = {}
    for m in methods:
        below = {ref: [p for p in common if ref in table[p]
                       and table[p][m] < table[p][ref] - SLACK]
                 for ref in ("concat-kmeans", "paper")}
        out[m] = {"mean_nmi": float(np.mean([table[p][m] for p in common])) if common else None,
                  "points": len(common),
                  "below_concat_kmeans": below["concat-kmeans"], "below_paper": below["paper"],
                  "seconds": round(seconds.get(m, 0.0), 1)}
    return out


def format_tables(rows: list[dict]) -> str:
    """A markdown table of mean NMI (points x methods) and the summary per method."""
    table, summary = mean_table(rows), summarise(rows)
    methods = list(summary)
    lines = ["| point | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    for p, by in table.items():
        cells = ["-" if by.get(m) is None else f"{by[m]:.3f}" for m in methods]
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    lines += ["", "| method | mean NMI | points | > 1 pt below concat-kmeans | "
              "> 1 pt below paper | seconds |", "|---|---|---|---|---|---|"]
    for m, s in summary.items():
        mean = "-" if s["mean_nmi"] is None else f"{s['mean_nmi']:.4f}"
        lines.append(f"| {m} | {mean} | {s['points']} | {len(s['below_concat_kmeans'])} | "
                     f"{len(s['below_paper'])} | {s['seconds']} |")
    return "\n".join(lines)


def plot_signal(results: list[dict], path: Path) -> None:
    """NMI against the per-view signal, one line per method, for the dense balanced
    points without a noise view of the most common (N, k, views): complementary views on
    the left, redundant on the right; each part's points (``results``: the JSON documents
    of this script) with their own line style."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colours, titles = {}, {}
    for style, result in zip(("-o", "--s", ":^"), results, strict=False):
        points = {p["name"]: p for p in result["points"]}
        table = mean_table(result["rows"])
        for ax, complementary in zip(axes, (True, False), strict=True):
            chosen = [points[n] for n in table if points[n]["kind"] == "dense"
                      and points[n]["sizes"] == "balanced" and not points[n]["noise_view"]
                      and points[n]["complementary"] == complementary]
            shapes = [(p["n_samples"], p["n_clusters"], p["n_views"]) for p in chosen]
            if not shapes:
                continue
            shape = max(set(shapes), key=lambda s: len({p["signal"] for p, t in
                                                        zip(chosen, shapes, strict=True)
                                                        if t == s}))
            line = sorted((p["signal"], p["name"]) for p, t in zip(chosen, shapes, strict=True)
                          if t == shape)
            for m in result["methods"]:
                xs = [s for s, n in line if table[n].get(m) is not None]
                ys = [table[n][m] for s, n in line if table[n].get(m) is not None]
                drawn = ax.plot(xs, ys, style, color=colours.get(m), markersize=4,
                                label=f"{m} ({result['part']})")[0]
                colours.setdefault(m, drawn.get_color())
            titles.setdefault(complementary, []).append(
                f"{result['part']}: N={shape[0]}, k={shape[1]}, {shape[2]} views")
    for ax, complementary in zip(axes, (True, False), strict=True):
        ax.set_title(f"{'complementary' if complementary else 'redundant'} views\n"
                     + "; ".join(titles.get(complementary, [])), fontsize=9)
        ax.set_xlabel("per-view signal")
        ax.set_ylabel("NMI (mean over seeds)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=90)


def split_methods(text: str) -> list[str]:
    """``"paper,best:a=1,b=2,concat-kmeans"`` -> ``["paper", "best:a=1,b=2",
    "concat-kmeans"]``: a part with ``=`` and no ``:`` is one more field of the method before."""
    methods: list[str] = []
    for part in text.split(","):
        if methods and "=" in part and ":" not in part:
            methods[-1] += "," + part
        else:
            methods.append(part)
    return methods


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=tuple(PARTS), default="design")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated; best:FIELD=VALUE,FIELD=VALUE changes several "
                             "fields of one configuration")
    parser.add_argument("--max-samples", type=int, default=None,
                        help="skip the points with more samples")
    parser.add_argument("--points", help="comma-separated point names (default: all)")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--redraw", type=int, default=0,
                        help="add this to every point's data seed: a fresh draw of the same "
                             "points, data nobody has measured on (0: the points as fixed)")
    parser.add_argument("--json", type=Path, help="write the rows and summary here")
    parser.add_argument("--plot", type=Path, help="draw NMI against signal here (PNG)")
    parser.add_argument("--from-json", help="plot/tabulate these JSON files, run nothing")
    args = parser.parse_args(argv)
    if args.from_json:
        results = [json.loads(Path(f).read_text()) for f in args.from_json.split(",")]
    else:
        points = [p for p in PARTS[args.part]
                  if args.max_samples is None or p.n_samples <= args.max_samples]
        if args.points:
            points = [p for p in points if p.name in args.points.split(",")]
        points = [dataclasses.replace(p, seed=p.seed + args.redraw) for p in points]
        methods = split_methods(args.methods)
        seeds = [int(s) for s in args.seeds.split(",")]
        started = time.perf_counter()
        rows = run_methods(points, methods, seeds, args.n_jobs)
        import fastmice

        results = [{"part": args.part, "redraw": args.redraw, "methods": methods, "seeds": seeds,
                    "fastmice": [fastmice.CODE_VERSION, str(Path(fastmice.__file__).parent)],
                    "max_samples": args.max_samples, "load_average": os.getloadavg(),
                    "wall_seconds": round(time.perf_counter() - started, 1),
                    "points": [dataclasses.asdict(p) for p in points],
                    "rows": rows, "summary": summarise(rows)}]
        if args.json:
            args.json.write_text(json.dumps(results[0], indent=1))
    for result in results:
        print(f"\n{result['part']} part, seeds {result['seeds']}\n")
        print(format_tables(result["rows"]))
    if args.plot:
        plot_signal(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
