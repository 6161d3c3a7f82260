"""The joint candidate's k-means: Lloyd's rounds from k-means++ starts, the lowest inertia kept.

Each start is scikit-learn's greedy k-means++ (:func:`fastmice._kmeans.kmeans_plusplus_indices`)
on the rows in float64, then litekmeans' rounds (:func:`fastmice._kmeans.lloyd_rounds`) on
the rows as they are. On few rows the starts run side by side, each on one thread (a start's
own row blocks are too short for threads to pay); on many, one after the other with every
thread on each. The result does not depend on the threads.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fastmice._kmeans import kmeans_plusplus_indices, lloyd_rounds
from fastmice._parallel import fill_blocks, map_blocks, map_threads
from fastmice._rows import MatrixRows

__all__ = ["JOINT_INIT_PER_CLUSTER", "JOINT_INIT_ROWS", "inertia", "joint_kmeans", "start_rows"]

#: Rows the k-means++ start of a short run (one start, ``JOINT_SAMPLED_ROUNDS`` rounds)
#: chooses from: a uniform subsample of at least this many and :data:`JOINT_INIT_PER_CLUSTER`
#: a cluster (as scikit-learn's ``MiniBatchKMeans`` starts on ``init_size`` rows). k-means++
#: streams every row once per centre: on all 20,000 rows at k = 400 it was 31 of the
#: candidate's 55 CPU-s; on 3,072 rows the candidate lost 0.8 points at k = 400, on 8,192 0.2.
JOINT_INIT_ROWS, JOINT_INIT_PER_CLUSTER = 8192, 20
#: Rows x clusters below which the starts run side by side.
STARTS_THREADED_WORK = 1_000_000


def inertia(Z, labels: np.ndarray, centers: np.ndarray, n_jobs: int = 1) -> float:
    """Sum of the squared distances of the rows of ``Z`` to their centres."""
    center_squares = np.einsum("ij,ij->i", centers, centers)

    def block(rows: slice) -> np.ndarray:  # each row's squared distance to its centre
        part, assigned_centers = Z[rows], centers[labels[rows]]
        row_sq = (np.asarray(part.multiply(part).sum(axis=1)).ravel() if sp.issparse(part)
                  else np.einsum("ij,ij->i", part, part, dtype=np.float64))
        assigned = np.asarray(part.multiply(assigned_centers).sum(axis=1)).ravel() \
            if sp.issparse(part) else np.einsum("ij,ij->i", part, assigned_centers,
                                                dtype=np.float64)
        return np.maximum(row_sq + center_squares[labels[rows]] - 2 * assigned, 0)

    return float(np.sum(np.concatenate(map_blocks(block, Z.shape[0], n_jobs))))


def start_rows(n_rows: int, n_clusters: int, seed: int, subsample: bool) -> np.ndarray:
    """Rows a k-means++ start chooses from: every row, or (``subsample``) a uniform sample of
    :data:`JOINT_INIT_ROWS` (at least :data:`JOINT_INIT_PER_CLUSTER` a cluster) drawn from
    ``seed``, in row order."""
    size = max(JOINT_INIT_ROWS, JOINT_INIT_PER_CLUSTER * n_clusters)
    if not subsample or size >= n_rows:
        return np.arange(n_rows)
    return np.sort(np.random.default_rng(seed).choice(n_rows, size, replace=False))


def _float64_rows(part, n_jobs: int):
    """The rows in float64 (scikit-learn's k-means++ upcasts float32 in small chunks)."""
    if sp.issparse(part):
        return part.astype(np.float64)
    return fill_blocks(np.empty(part.shape, dtype=np.float64),  # by row blocks in threads
                       lambda rows: part[rows], n_jobs)


def joint_kmeans(Z, n_clusters: int, seeds: list[int], n_jobs: int, max_iter: int,
                 subsample_start: bool = False) -> tuple[float, np.ndarray, np.ndarray]:
    """k-means of the rows of ``Z`` from one k-means++ start per seed.

    Parameters
    ----------
    Z : ndarray or CSR matrix of shape (n_rows, n_features), float32
    n_clusters : int
    seeds : list of int
        One start each; the first of equal inertias wins.
    n_jobs : int
    max_iter : int
        Lloyd's rounds of a start at most.
    subsample_start : bool, default=False
        Each start chosen among :func:`start_rows`'s subsample.

    Returns
    -------
    inertia : float
    labels : ndarray of shape (n_rows,)
    centers : ndarray of shape (n_clusters, n_features), float32
    """
    side_by_side = len(seeds) > 1 and Z.shape[0] * n_clusters < STARTS_THREADED_WORK
    inner_jobs = 1 if side_by_side else n_jobs
    every_row = None if subsample_start else _float64_rows(Z, n_jobs)

    def run(seed: int) -> tuple[float, np.ndarray, np.ndarray]:
        start = start_rows(Z.shape[0], n_clusters, seed, subsample_start)
        Z64 = every_row if every_row is not None else _float64_rows(Z[start], inner_jobs)
        first = Z64[kmeans_plusplus_indices(Z64, n_clusters, seed, inner_jobs)]
        first = first.toarray() if sp.issparse(first) else first
        labels, centers = lloyd_rounds(MatrixRows(Z, cosine=False, n_jobs=inner_jobs),
                                       np.asarray(first, dtype=np.float32), max_iter,
                                       metric="sqeuclidean")
        return (inertia(Z, labels, centers, inner_jobs), labels,
                np.asarray(centers, dtype=np.float32))

    best = None
    for result in map_threads(run, seeds, n_jobs if side_by_side else 1):
        if best is None or result[0] < best[0]:
            best = result
    return best
