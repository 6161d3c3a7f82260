"""Offline comparison of keep rules for the best mode's spectral candidate (issue 32,
docs/quality.md, "The spectral candidate").

For every set: the best mode's fit without the candidate (``FastMICE(k, metric="auto",
mode="best")`` with ``spectral_cluster_size=0``, seeds 0 and 1), then spectral clustering
on the 10-nearest-neighbour graph of its joint space (wide rows reduced to 256 singular
directions first, as ``n_clusters="auto"`` does; the k leading eigenvectors, rows
normalised, 10 k-means++ starts) and two rules:

* A: the spectral labels replace the best mode's where their weighted agreement with the
  members is higher;
* B: A, or within 0.05 below where the held-out check
  (:func:`fastmice._joint_consensus.heldout_prefers_joint`, margin 0.01) prefers them.

Prints one line per set (NMI of the best mode, the spectral labels, A and B; how many of
the two seeds each rule kept the candidate) and the means. Parts: ``explore`` (six points
of 165 samples, 15 clusters: redundant and complementary views, signal 0 / 0.25 / 0.5),
``design`` and ``confirmation`` (the shared halves of ``benchmarks/k_auto.py``, up to 2,000
samples), ``family:design`` and ``family:confirmation`` (the generated family's points up
to 2,000 samples).

Usage, from the repository root::

    python benchmarks/spectral_rules.py explore
    python benchmarks/spectral_rules.py family:design
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import scipy.linalg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import k_auto
from families import PARTS, make_point, point
from sklearn.metrics import normalized_mutual_info_score

from fastmice import FastMICE, _best
from fastmice._auto_k_graph import neighbour_graph
from fastmice._best import weighted_agreement
from fastmice._joint_consensus import heldout_prefers_joint
from fastmice._joint_kmeans import joint_kmeans

MAX_SAMPLES = 2000


def nmi(y, labels) -> float:
    return float(normalized_mutual_info_score(y, labels, average_method="max"))


def spectral(Z, k: int, seed: int, n_init: int = 10) -> np.ndarray:
    """Spectral clustering of the rows ``Z`` on their neighbour graph."""
    W = neighbour_graph(Z, seed).astype(np.float32)
    n = W.shape[0]
    _, vectors = scipy.linalg.eigh(W, subset_by_index=[n - k, n - 1], driver="evr")
    U = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    seeds = list(range(seed * 100, seed * 100 + n_init))
    return joint_kmeans(U.astype(np.float32), k, seeds, 1, 30)[1]


def sets(part: str):
    """(name, (views, labels)) of the part's sets."""
    if part == "explore":
        for complementary in (False, True):
            for signal in (0.0, 0.25, 0.5):
                p = point(165, 15, 3, signal, complementary,
                          seed=900 + int(100 * signal) + complementary)
                yield p.name, make_point(p)
    elif part in ("design", "confirmation"):
        for name in k_auto.parts()[part]:
            if not name.startswith("gen:"):
                Xs, y = k_auto.load_set(name)[:2]
                if len(y) <= MAX_SAMPLES:
                    yield name, (Xs, y)
    else:
        for p in PARTS[part.split(":")[1]]:
            if p.n_samples <= MAX_SAMPLES:
                yield p.name, make_point(p)


def main(argv: list[str] | None = None) -> int:
    part = (argv or sys.argv[1:] or ["explore"])[0]
    _best.CHOICES = dataclasses.replace(_best.CHOICES, spectral_cluster_size=0)
    table = []
    for name, (Xs, y) in sets(part):
        k = len(np.unique(y))
        rows = []
        for seed in (0, 1):
            fitted = FastMICE(k, metric="auto", mode="best", random_state=seed, n_jobs=2).fit(Xs)
            consensus = fitted.consensus_
            members, weights = fitted.base_labels_, consensus.member_weights
            labels = spectral(consensus.joint.space.transform(Xs, np.arange(len(y))), k, seed)
            kept_a = weighted_agreement(labels, members, weights) > \
                weighted_agreement(fitted.labels_, members, weights)
            kept_b = kept_a or (
                weighted_agreement(fitted.labels_, members, weights)
                - weighted_agreement(labels, members, weights) <= 0.05
                and heldout_prefers_joint(labels, members, weights, k, seed=seed, n_jobs=2,
                                          margin=0.01))
            best, candidate = nmi(y, fitted.labels_), nmi(y, labels)
            rows.append((best, candidate, candidate if kept_a else best,
                         candidate if kept_b else best, kept_a, kept_b))
        mean = np.array(rows, dtype=float).mean(axis=0)
        table.append(mean[:4])
        print(f"{name:40s} best {mean[0]:.3f} spectral {mean[1]:.3f} A {mean[2]:.3f} "
              f"B {mean[3]:.3f} kept by A {int(mean[4] * 2)} by B {int(mean[5] * 2)}",
              flush=True)
    means = np.mean(table, axis=0)
    print(f"MEAN best {means[0]:.4f} spectral {means[1]:.4f} A {means[2]:.4f} "
          f"B {means[3]:.4f} ({len(table)} sets)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
