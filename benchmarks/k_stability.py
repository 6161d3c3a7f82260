"""Choosing k by stability (an exploration, not the library's rule): on the parts of
``benchmarks/k_auto.py``, how often the k whose two half-ensemble consensuses agree best lands
within max(1, k/5) of the true k, beside the eigengap rule ``n_clusters="auto"`` uses, and
what it costs.

For every set: the base clusterings of ``FastMICE("auto", mode="best", random_state=0)``
(the eigengap rule's own ensemble; its chosen k is kept), then, on at most ``--rows`` rows,
the best mode's consensus (:func:`fastmice.consensus_partition`, ``mode="best"``) of the
even-numbered and of the odd-numbered base clusterings at every k of a geometric grid
(``round(2 r^i)`` up to the eigengap rule's largest candidate). The stability of k is the
adjusted mutual information (AMI, corrected for chance: plain NMI between two partitions
grows with k) of the two halves' consensuses; the rule picks the grid k of the largest.
"NMI" columns are the halves' consensuses' mean NMI with the truth (the NMI a user would get
from them, not from the full fit). Seconds: wall, for the grid alone, against the auto fit.

Usage, from the repository root::

    python benchmarks/k_stability.py --part design
    python benchmarks/k_stability.py --part confirmation --ratio 1.2 --rows 5000
    python benchmarks/k_stability.py --sets gen:d:40:b,MSRCv1
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from k_auto import load_set, near, parts
from sklearn.metrics import adjusted_mutual_info_score

from fastmice import FastMICE, _joint_consensus
from fastmice._consensus import consensus_partition
from fastmice.metrics import clustering_scores


def auto_ensemble(Xs) -> tuple[np.ndarray, int, int, float]:
    """The auto fit's base clusterings (n_samples, n_members), chosen k, largest candidate,
    wall seconds."""
    seen = {}
    choose = _joint_consensus.choose_n_clusters

    def recording(base_labels, *, seed):
        seen["base"] = np.asarray(base_labels).copy()
        seen["choice"] = choose(base_labels, seed=seed)
        return seen["choice"]

    _joint_consensus.choose_n_clusters = recording
    try:
        start = time.perf_counter()
        FastMICE("auto", mode="best", random_state=0, n_jobs=2).fit(Xs)
        seconds = time.perf_counter() - start
    finally:
        _joint_consensus.choose_n_clusters = choose
    choice = seen["choice"]
    return seen["base"], choice.n_clusters, int(choice.candidates[-1]), seconds


def geometric_grid(k_max: int, ratio: float) -> list[int]:
    """``round(2 ratio^i)`` up to ``k_max``, without repeats."""
    return sorted({round(2 * ratio ** i) for i in range(200) if 2 * ratio ** i <= k_max})


def stability(base: np.ndarray, y: np.ndarray, ks: list[int],
              max_rows: int) -> dict[int, tuple[float, float]]:
    """``{k: (AMI of the halves' consensuses, their mean NMI with y)}`` for every k."""
    n, members = base.shape
    rows = np.arange(n) if n <= max_rows else \
        np.sort(np.random.default_rng(0).choice(n, max_rows, replace=False))
    base, y = base[rows], y[rows]
    halves = (np.arange(0, members, 2), np.arange(1, members, 2))
    out = {}
    for k in (k for k in ks if k < len(rows)):
        labels = [consensus_partition(base[:, half], k, seed=7 + i, n_jobs=2,
                                      mode="best").labels_ for i, half in enumerate(halves)]
        out[k] = (float(adjusted_mutual_info_score(*labels)),
                  float(np.mean([clustering_scores(y, lab)["nmi"] for lab in labels])))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("design", "confirmation"), default="design")
    parser.add_argument("--sets", help="comma-separated set names instead of a part")
    parser.add_argument("--ratio", type=float, default=1.2)
    parser.add_argument("--rows", type=int, default=5000)
    args = parser.parse_args(argv)
    print("| set | true k | eigengap k | stability k | NMI at eigengap k | NMI at stability k |"
          " NMI at true k | grid s / auto fit s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    totals = np.zeros(5)
    names = args.sets.split(",") if args.sets else parts()[args.part]
    for name in names:
        Xs, y = load_set(name)
        k_true = len(np.unique(y))
        base, eig_k, k_max, fit_s = auto_ensemble(Xs)
        start = time.perf_counter()
        grid = stability(base, y, geometric_grid(k_max, args.ratio), args.rows)
        grid_s = time.perf_counter() - start
        stable_k = max(grid, key=lambda k: (grid[k][0], -k))
        eig_nmi = (grid if eig_k in grid else stability(base, y, [eig_k], args.rows))[eig_k][1]
        true_nmi = (grid if k_true in grid else stability(base, y, [k_true], args.rows))[k_true][1]
        totals += (near(eig_k, k_true), near(stable_k, k_true), eig_nmi, grid[stable_k][1],
                   true_nmi)
        print(f"| {name} | {k_true} | {eig_k}{'' if near(eig_k, k_true) else ' ✗'} | "
              f"{stable_k}{'' if near(stable_k, k_true) else ' ✗'} | {eig_nmi:.3f} | "
              f"{grid[stable_k][1]:.3f} | {true_nmi:.3f} | {grid_s:.1f} / {fit_s:.1f} |",
              flush=True)
    count = len(names)
    print(f"\nwithin max(1, k/5): eigengap {int(totals[0])} of {count}, stability "
          f"{int(totals[1])} of {count}; mean NMI at the eigengap k {totals[2] / count:.3f}, "
          f"at the stability k {totals[3] / count:.3f}, at the true k {totals[4] / count:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
