"""Two questions on k auto's neighbour graph (``fastmice._auto_k_graph``), issue 36's fifth
round (docs/quality.md, "Choosing k"):

* ``neighbours``: the graph's neighbour count (10 in the library) against others, the
  library's rule otherwise (its 2,000-row sample, ``(l_k - l_(k+1)) ln(k)^0.5``,
  candidates to n / 10): the chosen k of every set of a part of ``benchmarks/k_auto.py``
  and how many are within ``max(1, k / 5)`` of the truth;
* ``rows``: the same rule on 2,000, 4,000 and every row of chosen sets (candidates to
  n / 10 of the rows used), with its CPU seconds;
* ``witnesses`` (the sixth round): the library's graph against two other graphs of the same
  2,000-row sample, the rule otherwise the same: ``local``, weights ``exp(-d^2 / (s_i s_j))``
  with ``s_i`` the distance to a row's 7th neighbour (self-tuning spectral clustering's
  local scale, for clusters of unequal spread and size); ``views``, the mean of each view's
  own normalised neighbour graph (a view that sees the clusters is not diluted by the
  others' features); ``both``, the mean of the library's and ``views``;
* ``criteria``: the textbook internal criteria on the same sample, for comparison: k-means
  (scikit-learn, one start) of the sample's rows (reduced as the library's graph reduces them)
  at every k from 2 to 20, then every 15 % up to the library's largest candidate,
  and the k of the best silhouette, Calinski-Harabasz or Davies-Bouldin score.

Usage, from the repository root::

    python benchmarks/k_graph_sweep.py neighbours design --grid 5,7,10,15,20
    python benchmarks/k_graph_sweep.py rows gen:d:400:b,gen:d:400:s
    python benchmarks/k_graph_sweep.py witnesses design
    python benchmarks/k_graph_sweep.py criteria design
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import k_auto

import fastmice._auto_k_graph as graph
from fastmice._joint import fit_joint_space
from fastmice._metric_rule import resolve_metrics


def neighbours(part: str, grid: list[int]) -> None:
    hits = dict.fromkeys(grid, 0)
    names = k_auto.parts()[part]
    for name in names:
        Xs, y = k_auto.load_set(name)[:2]
        k = len(np.unique(y))
        metrics = resolve_metrics(Xs, "auto", "best")
        space = fit_joint_space(Xs, metrics, 2)
        chosen = []
        for count in grid:
            graph.GRAPH_NEIGHBOURS = count
            choice = graph.choose_n_clusters_joint(Xs, metrics, seed=0, n_jobs=2, space=space)
            hits[count] += k_auto.near(choice.n_clusters, k)
            chosen.append(choice.n_clusters)
        marks = [f"{count}:{c}{'' if k_auto.near(c, k) else 'x'}"
                 for count, c in zip(grid, chosen, strict=True)]
        print(f"{name:14s} k={k:3d} " + " ".join(marks), flush=True)
    print(" ".join(f"{count} neighbours: {h} of {len(names)}" for count, h in hits.items()))


def rows(names: list[str]) -> None:
    for name in names:
        Xs, y = k_auto.load_set(name)[:2]
        space = fit_joint_space(Xs, resolve_metrics(Xs, "auto", "best"), 1)
        n_samples = len(y)
        for size in (2000, 4000, n_samples):
            if size > n_samples:
                continue
            sample = np.sort(np.random.default_rng(0).choice(n_samples, size, replace=False))
            started = time.process_time()
            choice = graph.graph_eigengap_choice(space.transform(Xs, sample), 0)
            top = choice.candidates[np.argsort(choice.scores)[::-1][:3]].tolist()
            print(f"{name} {size} rows: k {choice.n_clusters} (top 3 {top}), "
                  f"{time.process_time() - started:.1f} CPU s", flush=True)


def _local_graph(Z, seed: int) -> np.ndarray:
    """The library's neighbour graph with each pair's weight ``exp(-d^2 / (s_i s_j))``,
    ``s_i`` the distance to row i's 7th neighbour (the same rows, neighbours and
    normalisation)."""
    distances, indices = graph.nearest_rows(graph.reduced_rows(Z, seed))
    local = distances[:, min(7, distances.shape[1]) - 1] + 1e-12
    return graph.normalised_graph(np.exp(-distances**2 / (local[:, None] * local[indices])),
                                  indices)


def _sample(Xs: list, n_samples: int) -> tuple:
    """The library's sample of joint rows (the sweep's root seed 0) and its SVD seed."""
    rows, seed = graph.sampled_rows(n_samples, 0)
    return fit_joint_space(Xs, resolve_metrics(Xs, "auto", "best"), 2).transform(Xs, rows), seed


def _tally(name: str, k: int, chosen: dict[str, int], hits: dict[str, int]) -> None:
    """Count and print each way's chosen k for one set (x: not within max(1, k / 5))."""
    for way, c in chosen.items():
        hits[way] += k_auto.near(c, k)
    print(f"{name:14s} k={k:3d} " + " ".join(
        f"{way}:{c}{'' if k_auto.near(c, k) else 'x'}" for way, c in chosen.items()), flush=True)


def criteria(part: str) -> None:
    from sklearn.cluster import KMeans
    from sklearn.metrics import (
        calinski_harabasz_score,
        davies_bouldin_score,
        silhouette_score,
    )

    scores = {"silhouette": silhouette_score, "calinski-harabasz": calinski_harabasz_score,
              "davies-bouldin": lambda Z, labels: -davies_bouldin_score(Z, labels)}
    names, hits = k_auto.parts()[part], dict.fromkeys(scores, 0)
    for name in names:
        Xs, y = k_auto.load_set(name)[:2]
        k = len(np.unique(y))
        Z = graph.reduced_rows(*_sample(Xs, len(y)))
        Z = Z.toarray() if sp.issparse(Z) else Z
        k_max = max(2, min(int(np.ceil(Z.shape[0] / graph.MAX_K_DIVISOR)), Z.shape[0] - 2))
        grid = sorted({*range(2, min(21, k_max + 1)),
                       *(round(20 * 1.15**i) for i in range(60) if 20 * 1.15**i <= k_max)})
        table = {score: [] for score in scores}
        for count in grid:
            labels = KMeans(count, n_init=1, max_iter=50, random_state=0).fit_predict(Z)
            for score, f in scores.items():
                table[score].append(f(Z, labels))
        _tally(name, k, {score: grid[int(np.argmax(v))] for score, v in table.items()}, hits)
    print(" ".join(f"{score}: {h} of {len(names)}" for score, h in hits.items()))


def witnesses(part: str) -> None:
    names, kinds = k_auto.parts()[part], ("library", "local", "views", "both")
    hits = dict.fromkeys(kinds, 0)
    for name in names:
        Xs, y = k_auto.load_set(name)[:2]
        k = len(np.unique(y))
        Z, seed = _sample(Xs, len(y))
        edges = np.cumsum([0] + [X.shape[1] for X in Xs])
        by_columns = sp.csc_matrix(Z) if sp.issparse(Z) else Z
        library = graph.neighbour_graph(Z, seed)
        views = sum(graph.neighbour_graph(by_columns[:, a:b], seed)
                    for a, b in itertools.pairwise(edges)) / len(Xs)
        chosen = {kind: graph.eigengap_choice(W).n_clusters for kind, W in zip(
            kinds, (library, _local_graph(Z, seed), views, (library + views) / 2), strict=True)}
        _tally(name, k, chosen, hits)
    print(" ".join(f"{kind}: {h} of {len(names)}" for kind, h in hits.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sweep = sub.add_parser("neighbours")
    sweep.add_argument("part", choices=("design", "confirmation", "fresh"))
    sweep.add_argument("--grid", default="5,7,10,15,20")
    sized = sub.add_parser("rows")
    sized.add_argument("sets")
    for command in ("witnesses", "criteria"):
        sub.add_parser(command).add_argument("part", choices=("design", "confirmation", "fresh"))
    args = parser.parse_args(argv)
    if args.command == "neighbours":
        neighbours(args.part, [int(g) for g in args.grid.split(",")])
    elif args.command in ("witnesses", "criteria"):
        {"witnesses": witnesses, "criteria": criteria}[args.command](args.part)
    else:
        rows(args.sets.split(","))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
