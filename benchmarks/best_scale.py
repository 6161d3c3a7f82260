"""The best mode's choices at scale: each one changed in turn on a generated shape.

A configuration is written as in ``benchmarks/best_ablation.py`` (``paper``, ``best`` or
``best:FIELD=VALUE,...`` of ``fastmice._best.BestChoices``); the best mode's sample limit
(``max_samples``) is lifted for every configuration, so that ``best`` is the best mode at
this size. Configurations alternate on each seed (a busy machine slows all alike). Each
fit prints one JSON line; a table of NMI (mean over the seeds), its gap to ``paper`` (same
seeds) and seconds ends the run.

Usage, from the repository root::

    python benchmarks/best_scale.py partial 100000 400 --seeds 0,1,2 \\
        paper best best:weighting=none best:replicates=1
    python benchmarks/best_scale.py paired 200000 20 --seeds 0 paper best --kmeans
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from best_ablation import parse_config
from scale_data import paired_views
from shapes import SHAPES, make_shape

import fastmice
from fastmice import _best, consensus_partition, record_stages
from fastmice.metrics import clustering_scores

NO_LIMIT = 10**12


def views(shape: str, n_samples: int, n_clusters: int, dims: str | None):
    """The generated set: ``paired`` from scale_data.py, the others from shapes.py."""
    if shape == "paired":
        return paired_views(n_samples, n_clusters, seed=0)
    kwargs = {} if dims is None else {"dims": tuple(int(d) for d in dims.split(","))}
    return make_shape(shape, n_samples, n_clusters, **kwargs)


#: The choices that change the view groups or their base clusterings (the others change
#: only the consensus).
BASE_CHOICES = ("empty_rows", "base_k_cap", "all_view_groups", "all_view_groups_euclidean")
_BASES: dict = {}


def fit(Xs, y, k: int, config: str, seed: int, n_jobs: int) -> dict:
    """NMI and seconds of one fit under ``config``.

    The base clusterings of the first configuration with the same base choices (and seed)
    are reused: then only the consensus runs, and ``seconds`` is the first fit's seconds
    before its consensus plus this consensus's (the labels are those of a whole fit).
    """
    mode, choices = parse_config(config)
    if "max_samples=" not in config:
        choices = dataclasses.replace(choices, max_samples=NO_LIMIT)
    base_key = (seed, mode, *(getattr(choices, c) for c in BASE_CHOICES)) \
        if mode == "best" else (seed, mode)
    _best.CHOICES = choices
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        if base_key in _BASES:
            model, base_seconds, base_cpu = _BASES[base_key]
            labels = consensus_partition(model.base_labels_, k, seed=model.root_seed_,
                                         n_jobs=n_jobs, mode=model.mode_).labels_
        else:
            with record_stages(this_thread=True) as stages:
                model = fastmice.FastMICE(k, mode=mode, random_state=seed,
                                          n_jobs=n_jobs).fit(Xs)
            labels = model.labels_
            base_seconds = time.perf_counter() - started - stages["consensus"]
            base_cpu = None
            _BASES[base_key] = (model, base_seconds, True)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        if base_cpu is not None:  # a reused fit: its base clusterings' seconds added
            seconds, cpu = seconds + base_seconds, None
    finally:
        _best.CHOICES = _best.BestChoices()
    return {"config": config, "seed": seed, "mode_": model.mode_,
            "metrics_": list(model.metrics_), "nmi": clustering_scores(y, labels)["nmi"],
            "seconds": seconds, "cpu_s": cpu, "reused_base": base_cpu is not None}


def kmeans(Xs, y, k: int, seed: int) -> dict:
    """scikit-learn's k-means (one init) on the concatenated views."""
    from sklearn.cluster import KMeans

    started = time.perf_counter()
    labels = KMeans(k, n_init=1, random_state=seed).fit_predict(np.hstack(Xs))
    return {"config": "kmeans-concat", "seed": seed,
            "nmi": clustering_scores(y, labels)["nmi"],
            "seconds": time.perf_counter() - started}


def table(rows: list[dict]) -> str:
    """NMI mean over the seeds, gap to paper (same seeds), seconds mean, per config."""
    configs = list(dict.fromkeys(r["config"] for r in rows))
    paper = {r["seed"]: r["nmi"] for r in rows if r["config"] == "paper"}
    lines = ["| configuration | NMI | vs paper | s/run | CPU s/run |", "|---|---|---|---|---|"]
    for c in configs:
        runs = [r for r in rows if r["config"] == c]
        gaps = [r["nmi"] - paper[r["seed"]] for r in runs if r["seed"] in paper]
        gap = f"{100 * np.mean(gaps):+.2f}" if gaps else "-"
        lines.append(f"| {c} | {np.mean([r['nmi'] for r in runs]):.4f} | {gap} | "
                     f"{np.mean([r['seconds'] for r in runs]):.1f} | "
                     f"{np.mean([r.get('cpu_s') or np.nan for r in runs]):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shape", choices=(*SHAPES, "paired"))
    parser.add_argument("n_samples", type=int)
    parser.add_argument("n_clusters", type=int)
    parser.add_argument("configs", nargs="+", help="paper, best or best:FIELD=VALUE,...")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--dims", help="view widths of a shapes.py shape (default YTF-400's)")
    parser.add_argument("--kmeans", action="store_true",
                        help="also k-means on the concatenated views")
    args = parser.parse_args(argv)
    Xs, y = views(args.shape, args.n_samples, args.n_clusters, args.dims)
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        for config in args.configs:
            rows.append(fit(Xs, y, args.n_clusters, config, seed, args.n_jobs))
            print(json.dumps(rows[-1]), flush=True)
        if args.kmeans:
            rows.append(kmeans(Xs, y, args.n_clusters, seed))
            print(json.dumps(rows[-1]), flush=True)
    print(f"{args.shape}, {args.n_samples} samples, k = {args.n_clusters}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
