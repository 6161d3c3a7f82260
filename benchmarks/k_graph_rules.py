"""Offline comparison of witnesses of k for ``n_clusters="auto"`` (issue 36, fourth round):
the eigengap of graphs of the best mode's joint space against the consensus graph's
eigengap (the rule of ``fastmice._auto_k``), on the parts of ``benchmarks/k_auto.py``.

For every set: the joint space (``fastmice._joint.fit_joint_space`` with the views' metrics
by ``metric="auto"``), reduced to 256 singular directions where wider, and the leading
eigenvalues of (a) the normalised, symmetrised 10-nearest-neighbour Gaussian graph of its
rows (every row, no sample) and (b) the column side of a bipartite anchor graph (1,000
anchors by 5 rounds of k-means on a subsample, 5 nearest anchors a row); the candidates'
scores ``(l_k - l_(k+1)) ln(k)^p`` for p in 0 / 0.5 / 1 and candidates up to N / 10 or N / 5;
and the k of ``FastMICE("auto", mode="best")`` as it was before this round. Prints one line
per set and the number of sets within ``max(1, k / 5)`` per rule. The library's own rule
(``fastmice._auto_k_graph``) samples 2,000 rows: its tables come from ``k_auto.py``.

Usage, from the repository root (slow: minutes per part, the eigenproblems of every row)::

    python benchmarks/k_graph_rules.py spectra design --json design.json
    python benchmarks/k_graph_rules.py score design.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import k_auto

from fastmice._joint import fit_joint_space
from fastmice._metric_rule import resolve_metrics


def joint_rows(Xs) -> np.ndarray:
    """Every row of the joint space, at most 256 singular directions wide."""
    from sklearn.decomposition import TruncatedSVD

    Z = fit_joint_space(Xs, resolve_metrics(Xs, "auto")).transform(Xs, slice(None))
    if Z.shape[1] > 256:
        Z = TruncatedSVD(256, algorithm="randomized", n_iter=4, random_state=0).fit_transform(Z)
    return np.asarray(Z.toarray() if sp.issparse(Z) else Z, dtype=np.float64)


def knn_spectrum(Z: np.ndarray, neighbours: int, count: int) -> np.ndarray:
    from sklearn.neighbors import NearestNeighbors

    n = Z.shape[0]
    dist, idx = NearestNeighbors(n_neighbors=neighbours + 1).fit(Z).kneighbors(Z)
    width = np.mean(dist[:, 1:])
    W = sp.csr_matrix((np.exp(-dist[:, 1:].ravel() ** 2 / (2 * width**2)),
                       idx[:, 1:].ravel(), np.arange(0, n * neighbours + 1, neighbours)),
                      shape=(n, n))
    W = W + W.T
    s = 1 / np.sqrt(np.asarray(W.sum(1)).ravel())
    S = sp.csr_matrix(sp.diags(s) @ W @ sp.diags(s))
    values = scipy.sparse.linalg.eigsh(S, k=min(count, n - 2), which="LA", v0=np.ones(n),
                                       return_eigenvectors=False, tol=1e-6)
    return np.sort(values)[::-1]


def anchor_spectrum(Z: np.ndarray, n_anchors: int, neighbours: int, count: int) -> np.ndarray:
    from sklearn.cluster import KMeans
    from sklearn.neighbors import NearestNeighbors

    n = Z.shape[0]
    n_anchors = min(n_anchors, n // 2)
    rng = np.random.default_rng(0)
    sub = Z[rng.choice(n, min(n, 10 * n_anchors), replace=False)]
    anchors = KMeans(n_anchors, n_init=1, max_iter=5, init="random",
                     random_state=0).fit(sub).cluster_centers_
    dist, idx = NearestNeighbors(n_neighbors=neighbours).fit(anchors).kneighbors(Z)
    width = np.mean(dist)
    B = sp.csr_matrix((np.exp(-dist.ravel() ** 2 / (2 * width**2)) + 1e-12, idx.ravel(),
                       np.arange(0, n * neighbours + 1, neighbours)), shape=(n, n_anchors))
    W = (B.T @ sp.diags(1 / np.asarray(B.sum(1)).ravel()) @ B).toarray()
    d = W.sum(1)
    d[d == 0] = 1
    S = W / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]
    count = min(count, n_anchors)
    return scipy.linalg.eigh(S, subset_by_index=[n_anchors - count, n_anchors - 1],
                             eigvals_only=True, driver="evr")[::-1]


def spectra(part: str) -> dict:
    from fastmice import FastMICE

    out = {}
    for name in k_auto.parts()[part]:
        Xs, y = k_auto.load_set(name)
        n, k = len(y), len(np.unique(y))
        auto = FastMICE("auto", mode="best", random_state=0, n_jobs=1).fit(Xs)
        Z = joint_rows(Xs)
        count = min(n - 2, max(60, n // 4) + 2, 500)
        out[name] = {"N": n, "k": k, "auto_k": int(auto.n_clusters_),
                     "knn": knn_spectrum(Z, 10, count).tolist(),
                     "anchor": anchor_spectrum(Z, 1000, 5, count).tolist()}
        print(name, n, k, file=sys.stderr, flush=True)
    return out


def near(chosen: int, k_true: int) -> bool:
    return abs(chosen - k_true) <= max(1, k_true // 5)


def score(rows: dict) -> None:
    hits: dict[str, int] = {"auto": 0}
    for name, r in rows.items():
        n, k = r["N"], r["k"]
        hits["auto"] += near(r["auto_k"], k)
        line = [f"{name:14s} N={n:5d} k={k:3d} auto={r['auto_k']}"]
        for source in ("knn", "anchor"):
            values = np.asarray(r[source])
            for divisor in (10, 5):
                k_max = min(len(values) - 2, max(2, -(-n // divisor)))
                ks = np.arange(2, k_max + 1)
                for power in (0, 0.5, 1):
                    chosen = int(ks[np.argmax((values[ks - 1] - values[ks])
                                              * np.log(ks) ** power)])
                    rule = f"{source} N/{divisor} p={power}"
                    hits[rule] = hits.get(rule, 0) + near(chosen, k)
                    line.append(f"{source[0]}{divisor}/{power}:{chosen}")
        print(" ".join(line))
    for rule, count in hits.items():
        print(f"{rule:24s} within on {count} of {len(rows)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("spectra")
    run.add_argument("part", choices=("design", "confirmation", "fresh"))
    run.add_argument("--json", required=True)
    scored = sub.add_parser("score")
    scored.add_argument("json")
    args = parser.parse_args(argv)
    if args.command == "spectra":
        Path(args.json).write_text(json.dumps(spectra(args.part)))
    else:
        score(json.loads(Path(args.json).read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
