"""Two questions on k auto's neighbour graph (``fastmice._auto_k_graph``), issue 36's fifth
round (docs/quality.md, "Choosing k"):

* ``neighbours``: the graph's neighbour count (10 in the library) against others, the
  library's rule otherwise (its 2,000-row sample, ``(l_k - l_(k+1)) ln(k)^0.5``,
  candidates to n / 10): the chosen k of every set of a part of ``benchmarks/k_auto.py``
  and how many are within ``max(1, k / 5)`` of the truth;
* ``rows``: the same rule on 2,000, 4,000 and every row of chosen sets (candidates to
  n / 10 of the rows used), with its CPU seconds.

Usage, from the repository root::

    python benchmarks/k_graph_sweep.py neighbours design --grid 5,7,10,15,20
    python benchmarks/k_graph_sweep.py rows gen:d:400:b,gen:d:400:s
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sweep = sub.add_parser("neighbours")
    sweep.add_argument("part", choices=("design", "confirmation", "fresh"))
    sweep.add_argument("--grid", default="5,7,10,15,20")
    sized = sub.add_parser("rows")
    sized.add_argument("sets")
    args = parser.parse_args(argv)
    if args.command == "neighbours":
        neighbours(args.part, [int(g) for g in args.grid.split(",")])
    else:
        rows(args.sets.split(","))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
