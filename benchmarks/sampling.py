"""What each sampling shortcut of fastmice/_consensus.py costs in NMI and seconds.

The view groups' graphs are built once per seed; then the base clusterings and the
consensus are computed under each setting of the module's sample sizes (the same graphs,
the same seeds), and scored against the labels. ``exact`` is every step on every sample.

    python benchmarks/sampling.py partial 100000 400 --seeds 0,1,2 --settings default,exact
    python benchmarks/sampling.py summary run1.jsonl run2.jsonl   # the same table from logs
    python benchmarks/sampling.py stages run1.jsonl   # NMI and thread-seconds per stage

It ends with a table per shape, size and k: each setting's NMI mean over the seeds and its
gap to ``exact`` (the setting's NMI minus exact's, averaged over the same seeds).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shapes import DIMS, SHAPES, load_shape_dir, make_shape, write_shape_dir

import fastmice._consensus as consensus
from fastmice import (
    EnsembleParams,
    build_group_graph,
    cluster_group,
    consensus_partition,
    draw_view_groups,
    record_stages,
)
from fastmice.metrics import clustering_scores

EVERY = 10**12  # a sample size above any N: that step on every sample
#: Each setting overrides some of the module's constants (the rest keep their values).
SETTINGS = {
    "default": {},
    "old-default": {"BASE_SAMPLE": 50_000, "CONSENSUS_FULL_ROUNDS": 4},  # CODE_VERSION 9
    "exact": {"BASE_SAMPLE": EVERY, "BASE_KMEANS_SAMPLE": EVERY,
              "CONSENSUS_SAMPLE": EVERY, "CONSENSUS_KMEANS_SAMPLE": EVERY},
    "base-exact": {"BASE_SAMPLE": EVERY, "BASE_KMEANS_SAMPLE": EVERY},
    "base-eigen-all": {"BASE_SAMPLE": EVERY},
    "base-kmeans-all": {"BASE_KMEANS_SAMPLE": EVERY},
    "base-rounds-3": {"BASE_FULL_ROUNDS": 3},
    "consensus-exact": {"CONSENSUS_SAMPLE": EVERY, "CONSENSUS_KMEANS_SAMPLE": EVERY},
    "consensus-eigen-all": {"CONSENSUS_SAMPLE": EVERY},
    "consensus-kmeans-all": {"CONSENSUS_KMEANS_SAMPLE": EVERY},
    "consensus-rounds-10": {"CONSENSUS_FULL_ROUNDS": 10},
    "eigen-all+ckm-60k": {"BASE_SAMPLE": EVERY, "CONSENSUS_KMEANS_SAMPLE": 60_000},
    "eigen-all+crounds-10": {"BASE_SAMPLE": EVERY, "CONSENSUS_FULL_ROUNDS": 10},
    "eigen-all+ceig-25k": {"BASE_SAMPLE": EVERY, "CONSENSUS_SAMPLE": 25_000},
}
_BASE_CACHE: dict = {}


@contextmanager
def constants(overrides: dict[str, int]):
    """Set some of fastmice._consensus's module constants for the duration."""
    saved = {name: getattr(consensus, name) for name in overrides}
    for name, value in overrides.items():
        setattr(consensus, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(consensus, name, value)


def group_graphs(Xs, n_clusters: int, seed: int, n_jobs: int, n_groups: int = 20):
    """The view groups' specs, graphs and stage thread-seconds of one seed (the fit's draws)."""
    params = EnsembleParams(n_clusters=n_clusters, n_groups=n_groups,
                            random_state=seed).for_data(
        Xs[0].shape[0], len(Xs))
    specs = draw_view_groups([X.shape[1] for X in Xs], Xs[0].shape[0], params,
                             seed=params.root_seed)
    with record_stages() as stages:
        graphs = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(build_group_graph)(Xs, spec) for spec in specs)
    return params.root_seed, specs, [B for B, _ in graphs], stages


def run_setting(name: str, specs, graphs, root_seed: int, n_clusters: int, y: np.ndarray,
                n_jobs: int) -> dict:
    """Base clusterings and consensus under one setting: NMI, seconds, CPU seconds, stages."""
    started, cpu_started = time.perf_counter(), time.process_time()
    with constants(SETTINGS[name]), record_stages() as stages:
        base_key = (root_seed, tuple(sorted((k, v) for k, v in SETTINGS[name].items()
                                             if k.startswith("BASE"))))
        if base_key not in _BASE_CACHE:  # the same base clusterings: computed once
            partitions = Parallel(n_jobs=n_jobs, prefer="threads")(
                delayed(cluster_group)(B, spec) for B, spec in zip(graphs, specs, strict=True))
            _BASE_CACHE[base_key] = np.column_stack([p.labels_ for p in partitions])
        base = _BASE_CACHE[base_key]
        base_seconds = time.perf_counter() - started
        labels = consensus_partition(base, n_clusters, seed=root_seed, n_jobs=n_jobs).labels_
    base_nmi = np.mean([clustering_scores(y, base[:, j])["nmi"] for j in range(base.shape[1])])
    return {"setting": name, "nmi": clustering_scores(y, labels)["nmi"],
            "base_nmi": float(base_nmi), "base_s": base_seconds,
            "seconds": time.perf_counter() - started,
            "cpu_s": round(time.process_time() - cpu_started, 1),  # the process's CPU seconds
            # The process's peak so far (the graphs and every setting run before included).
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            "stages": {key: round(value, 1) for key, value in stages.items()}}


def summarize(rows: list[dict]) -> list[dict]:
    """Per shape, size, k and setting: NMI mean over the seeds, and its gap to ``exact``.

    ``gap`` is the setting's mean minus ``exact``'s mean over the seeds both were run on
    (None without an ``exact`` row of the same shape, size and k).
    """
    by_key: dict[tuple, dict[str, dict[int, float]]] = {}
    for row in rows:
        if "setting" in row:
            by_key.setdefault((row["shape"], row["n"], row["k"]), {}).setdefault(
                row["setting"], {})[row["seed"]] = row["nmi"]
    summary = []
    for (shape, n, k), settings in by_key.items():
        exact = settings.get("exact", {})
        for name, nmi in settings.items():
            common = sorted(set(nmi) & set(exact))
            gap = (float(np.mean([nmi[s] - exact[s] for s in common])) if common else None)
            summary.append({"shape": shape, "n": n, "k": k, "setting": name,
                            "seeds": sorted(nmi), "mean_nmi": float(np.mean(list(nmi.values()))),
                            "gap_to_exact": gap})
    return summary


def print_summary(rows: list[dict]) -> None:
    """The summary as a Markdown table (NMI in points of 100 for the gap)."""
    print("| shape | N | k | setting | seeds | mean NMI | gap to exact (points) |")
    print("|---|---:|---:|---|---|---:|---:|")
    for r in summarize(rows):
        gap = "" if r["gap_to_exact"] is None else f"{100 * r['gap_to_exact']:+.2f}"
        seeds = ",".join(str(s) for s in r["seeds"])
        print(f"| {r['shape']} | {r['n']:,} | {r['k']} | {r['setting']} | {seeds} | "
              f"{r['mean_nmi']:.4f} | {gap} |")


def stage_table(rows: list[dict]) -> list[dict]:
    """Per shape, size, k and seed: default and exact NMI, and thread-seconds per stage.

    The graphs' stages (anchors, search) are shared by both settings; base eigen/k-means
    and consensus eigen/k-means are each setting's own (``None`` where not recorded).
    """
    graphs = {(r["shape"], r["n"], r["k"], r["seed"]): r for r in rows if "graph_stages" in r}
    settings: dict[tuple, dict[str, dict]] = {}
    for row in rows:
        if "setting" in row:
            key = (row["shape"], row["n"], row["k"], row["seed"])
            settings.setdefault(key, {})[row["setting"]] = row
    table = []
    for key, header in graphs.items():
        entry = dict(zip(("shape", "n", "k", "seed"), key, strict=True))
        graph = header["graph_stages"]
        entry.update(anchors=graph.get("anchors"), search=graph.get("search"),
                     graphs_cpu=header.get("graphs_cpu_s"))
        for name in ("default", "exact"):
            row = settings.get(key, {}).get(name)
            stages = {} if row is None else row["stages"]
            entry[f"{name}_nmi"] = None if row is None else row["nmi"]
            entry[f"{name}_cpu"] = None if row is None else row.get("cpu_s")
            for stage_name, label in (("eigen", "eigen"), ("kmeans", "kmeans"),
                                      ("consensus/eigen", "c_eigen"),
                                      ("consensus/kmeans", "c_kmeans")):
                entry[f"{name}_{label}"] = stages.get(stage_name)
        table.append(entry)
    return table


def print_stage_table(rows: list[dict]) -> None:
    """:func:`stage_table` in Markdown: stages as default / exact thread-seconds; CPU
    seconds of the process for the graphs, then for the rest under each setting."""
    def cell(value, digits=1):
        return "" if value is None else f"{value:.{digits}f}"

    print("| shape | N | k | seed | default NMI | exact NMI | anchors | search | base eigen "
          "| base k-means | consensus eigen | consensus k-means | CPU s: graphs, default, exact |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in stage_table(rows):
        pairs = [f"{cell(r['default_' + s])} / {cell(r['exact_' + s])}"
                 for s in ("eigen", "kmeans", "c_eigen", "c_kmeans")]
        print(f"| {r['shape']} | {r['n']:,} | {r['k']} | {r['seed']} | "
              f"{cell(r['default_nmi'], 4)} | {cell(r['exact_nmi'], 4)} | "
              f"{cell(r['anchors'])} | {cell(r['search'])} | " + " | ".join(pairs) +
              f" | {cell(r['graphs_cpu'])}, {cell(r['default_cpu'])}, {cell(r['exact_cpu'])} |")


def _views(args) -> tuple[list[np.ndarray], np.ndarray]:
    if args.shape == "latent":
        from scale_data import latent_views
        return latent_views(args.n_samples, args.n_clusters)
    if args.data_dir is not None:  # written once, read memory-mapped
        if args.dims is not None or args.noise_scale != 1.0:
            raise SystemExit("--data-dir takes the default widths and noise only.")
        folder, _ = write_shape_dir(args.data_dir / f"{args.shape}-{args.n_samples}-k"
                                    f"{args.n_clusters}", args.shape, args.n_samples,
                                    args.n_clusters)
        return load_shape_dir(folder)
    dims = DIMS if args.dims is None else tuple(int(d) for d in args.dims.split(","))
    return make_shape(args.shape, args.n_samples, args.n_clusters, dims=dims,
                      noise_scale=args.noise_scale)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("summary", "stages"):  # tables from the logs: sampling.py
        logged = [json.loads(line) for path in argv[1:]  # summary|stages LOG.jsonl ...
                  for line in Path(path).read_text().splitlines() if line.startswith("{")]
        (print_summary if argv[0] == "summary" else print_stage_table)(logged)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("shape", choices=(*SHAPES, "latent"))
    parser.add_argument("n_samples", type=int)
    parser.add_argument("n_clusters", type=int)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--settings", default="default,exact")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--dims", help="view widths, e.g. 236,144,128,160 (default YTF-400's)")
    parser.add_argument("--noise-scale", type=float, default=1.0)
    parser.add_argument("--data-dir", type=Path,
                        help="write the set there once (or reuse it) and read it memory-mapped")
    args = parser.parse_args(argv)
    Xs, y = _views(args)
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        started, cpu_started = time.perf_counter(), time.process_time()
        root_seed, specs, graphs, stages = group_graphs(Xs, args.n_clusters, seed,
                                                        args.n_jobs, args.groups)
        print(json.dumps({"shape": args.shape, "n": args.n_samples, "k": args.n_clusters,
                          "seed": seed, "graphs_s": round(time.perf_counter() - started, 1),
                          "graphs_cpu_s": round(time.process_time() - cpu_started, 1),
                          "graph_stages": {key: round(value, 1)
                                           for key, value in stages.items()}}), flush=True)
        for name in args.settings.split(","):
            row = run_setting(name, specs, graphs, root_seed, args.n_clusters, y,
                              args.n_jobs)
            rows.append({"shape": args.shape, "n": args.n_samples, "k": args.n_clusters,
                         "seed": seed, **row})
            print(json.dumps(rows[-1]), flush=True)
        _BASE_CACHE.clear()  # another seed's base clusterings: free the memory
    print_summary(rows)


if __name__ == "__main__":
    main()
