"""litekmeans: the k-means variant the official FastMICE code uses everywhere (SPEC section 5).

It differs from scikit-learn's ``KMeans`` on purpose: random-row initialisation (no k-means++),
stopping when the assignment no longer changes, empty clusters repaired by moving the worst-fitted
points into them, and replicates compared by the sum of *non-squared* distances.

The rows it clusters are given either as a matrix (:class:`MatrixRows`: dense or CSR) or as
the transfer-cut embedding of a bipartite graph (:class:`TransferRows`), whose rows
``normalise(R_i U)`` are never formed all at once: with ``R`` sparse (a few entries a row)
and ``U`` small, an assignment costs ``O(nnz(R) k + n_columns k^2)`` instead of ``O(N k^2)``.
On many rows the rounds may run on a uniform sample of them, then a few more on every row
(:func:`sampled_litekmeans`).
"""

from __future__ import annotations

import math
import os

import numpy as np
import scipy.sparse as sp

from fastmice._lloyd_batch import batched_rounds
from fastmice._parallel import map_blocks, map_threads
from fastmice._rows import MatrixRows, Rows, TransferRows, cluster_means, repair_labels

__all__ = ["kmeans_plusplus_indices", "litekmeans", "lloyd_rounds", "sampled_litekmeans"]

#: n_samples * n_clusters from which replicates run in threads (below it, threads cost more
#: and the replicates of dense rows run side by side in one thread instead).
_PARALLEL_WORK = 1_000_000
#: Most rows x clusters x replicates whose products are held at once when the replicates
#: run side by side (2**22 float64: 32 MiB).
_BATCH_PRODUCTS = 2**22


def _centers(rows: Rows, labels: np.ndarray, n_clusters: int) -> np.ndarray:
    """Mean of the members of each cluster (unit-normalised for cosine); empty clusters get 0."""
    return cluster_means(rows.center_sums(labels, n_clusters),
                         np.bincount(labels, minlength=n_clusters), rows.cosine)


def _repair(rows: Rows, labels: np.ndarray, val: np.ndarray, n_clusters: int) -> np.ndarray:
    """Move the worst-fitted rows into empty clusters, one each (litekmeans' repair)."""
    # Worst-fitted points first: largest squared distance, or smallest similarity.
    return repair_labels(labels, val if rows.cosine else -(val + rows.sq_norms), n_clusters)


def _single_run(rows: Rows, n_clusters: int, max_iter: int,
                init_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return lloyd_rounds(rows, rows.take(init_rows), max_iter)


def _sum_of_distances(rows: Rows, labels: np.ndarray, centers: np.ndarray) -> float:
    assigned = rows.assigned_products(labels, centers)
    if rows.cosine:
        return float(np.sum(1.0 - assigned))
    center_sq = np.einsum("ij,ij->i", centers, centers)[labels]
    return float(np.sum(np.sqrt(np.maximum(rows.sq_norms + center_sq - 2 * assigned, 0))))


def _as_rows(X, metric: str) -> Rows:
    if isinstance(X, MatrixRows | TransferRows):
        return X
    return MatrixRows(X, cosine=metric == "cosine")


#: Rows of the data each piece of a k-means++ distance step covers (fixed: the result does
#: not depend on the number of threads), and the rows x features from which the pieces of a
#: step run in threads (below, a step is too short for threads to pay).
_PLUSPLUS_BLOCK, _PLUSPLUS_PARALLEL_WORK = 512, 4_000_000


def kmeans_plusplus_indices(X, n_clusters: int, seed: int, n_jobs: int = 1) -> np.ndarray:
    """Rows chosen by greedy k-means++, as scikit-learn's ``kmeans_plusplus(X, n_clusters,
    random_state=seed)`` chooses them, with each step's distances in ``n_jobs`` threads.

    Each step's ``2 + ln k`` candidates are compared with every row: ``n_rows x (2 + ln k) x
    n_features`` multiply-adds a step, the cost of the whole initialisation; scikit-learn
    computes them on one thread. Here they run by fixed row blocks; the random draws, the
    running minimum and the potentials are computed on whole arrays as scikit-learn does.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_rows, n_features), float64
    n_clusters : int
        At most ``n_rows``.
    seed : int
        Seed of the ``numpy.random.RandomState`` the draws come from.
    n_jobs : int, default=1

    Returns
    -------
    indices : ndarray of shape (n_clusters,)
    """
    from sklearn.utils.extmath import row_norms

    n_rows = X.shape[0]
    if n_rows * X.shape[1] < _PLUSPLUS_PARALLEL_WORK:
        n_jobs = 1
    squared_norms = row_norms(X, squared=True)
    random_state = np.random.RandomState(seed)
    weights = np.ones(n_rows, dtype=X.dtype)
    n_trials = 2 + int(np.log(n_clusters))

    def squared_distances(chosen) -> np.ndarray:
        # As scikit-learn's _euclidean_distances(chosen, X): -2 chosen X^T + norms, >= 0.
        chosen_norms = row_norms(chosen, squared=True)[:, None]

        out = np.empty((chosen.shape[0], n_rows), dtype=np.result_type(chosen, X))

        def block(rows: slice) -> None:  # each piece into its own columns of ``out``
            products = chosen @ X[rows].T
            distances = out[:, rows]
            np.multiply(products.toarray() if sp.issparse(products) else products, -2,
                        out=distances)
            distances += chosen_norms
            distances += squared_norms[None, rows]
            np.maximum(distances, 0, out=distances)

        map_blocks(block, n_rows, n_jobs, _PLUSPLUS_BLOCK)
        return out

    indices = np.full(n_clusters, -1, dtype=np.intp)
    indices[0] = random_state.choice(n_rows, p=weights / weights.sum())
    first = X[indices[:1]]
    closest = squared_distances(first.toarray() if sp.issparse(X) else first)[0]
    potential = closest @ weights
    for c in range(1, n_clusters):
        targets = random_state.uniform(size=n_trials) * potential
        candidates = np.searchsorted(np.cumsum(weights * closest), targets)
        np.clip(candidates, None, closest.size - 1, out=candidates)
        distances = squared_distances(X[candidates])
        np.minimum(closest, distances, out=distances)
        potentials = distances @ weights.reshape(-1, 1)
        best = np.argmin(potentials)
        potential, closest = potentials[best], distances[best]
        indices[c] = candidates[best]
    return indices


def _kmeans_plusplus_inits(rows: Rows, n_clusters: int, n_init: int,
                           rng: np.random.Generator, n_jobs: int) -> list[np.ndarray]:
    """Each replicate's initial rows by greedy k-means++ (:func:`kmeans_plusplus_indices`,
    one seed each drawn from ``rng`` in replicate order), the replicates side by side.

    Squared Euclidean between the rows as :meth:`take` gives them (unit rows for the
    consensus embedding, where that orders pairs as cosine does). Costs about
    ``n_rows * n_clusters * (2 + log k) * n_features`` flops: meant for a sample.
    """
    seeds = [int(rng.integers(np.iinfo(np.int32).max)) for _ in range(n_init)]
    dense = np.asarray(rows.take(np.arange(rows.n_rows)), dtype=np.float64)
    return map_threads(lambda seed: kmeans_plusplus_indices(dense, n_clusters, seed, n_jobs),
                       seeds, n_jobs)


def litekmeans(X, n_clusters: int, *, metric: str = "sqeuclidean", max_iter: int = 100,
               n_init: int = 1, rng: np.random.Generator,
               n_jobs: int | None = None, init: str = "random") -> tuple[np.ndarray, np.ndarray]:
    """Cluster the rows of ``X`` exactly as Deng Cai's litekmeans does.

    Input is assumed validated: ``X`` is a float ndarray or CSR matrix of shape
    (n_samples, n_features) with ``n_samples >= n_clusters``, or a :class:`TransferRows`.

    Parameters
    ----------
    X : ndarray, csr_matrix or TransferRows of shape (n_samples, n_features)
    n_clusters : int
    metric : {"sqeuclidean", "cosine"}, default="sqeuclidean"
        With "cosine", rows are assigned by the largest dot product with unit-norm centres
        (``X`` is *not* normalised here, as in the original). ``TransferRows`` are cosine.
    max_iter : int, default=100
        Maximum number of assignment and update rounds.
    n_init : int, default=1
        Replicates; the one with the smallest sum of within-cluster distances is kept.
    rng : numpy.random.Generator
        Source of the random initial rows.
    n_jobs : int, optional
        Most threads for the replicates (default: as many as cores); they run in threads
        only when the work is large. The result does not depend on it.
    init : {"random", "k-means++"}, default="random"
        Each replicate's initial centres: distinct rows drawn at random (litekmeans), or
        chosen by k-means++ (:func:`_kmeans_plusplus_inits`; the best mode's consensus on
        large data).

    Returns
    -------
    labels : ndarray of shape (n_samples,)
        Labels in ``0..n_clusters-1``; every cluster is non-empty.
    centers : ndarray of shape (n_clusters, n_features)
        Centres after the last update.
    """
    rows = _as_rows(X, metric)
    if rows.n_rows < n_clusters:
        raise ValueError(f"n_samples={rows.n_rows} must be >= n_clusters={n_clusters} for "
                         f"k-means.")
    # Every replicate's initial rows are drawn first, in replicate order: the replicates are
    # then independent and may run side by side with the same result.
    if init == "k-means++":
        inits = _kmeans_plusplus_inits(rows, n_clusters, n_init, rng,
                                       n_jobs or os.cpu_count() or 1)
    elif init == "random":
        inits = [np.sort(rng.choice(rows.n_rows, n_clusters, replace=False))
                 for _ in range(n_init)]
    else:
        raise ValueError(f"init={init!r} is not valid; expected 'random' or 'k-means++'.")
    if n_init == 1:
        return _single_run(rows, n_clusters, max_iter, inits[0])

    def replicate(init_rows: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        labels, centers = _single_run(rows, n_clusters, max_iter, init_rows)
        return _sum_of_distances(rows, labels, centers), labels, centers

    large = rows.n_rows * n_clusters >= _PARALLEL_WORK
    threads = n_jobs or os.cpu_count() or 1
    if not large and isinstance(rows, MatrixRows) and not sp.issparse(rows.X):
        runs = _batched_replicates(rows, inits, max_iter, threads)
    else:
        runs = map_threads(replicate, inits, min(n_init, threads) if large else 1)
    best = runs[0]
    for run in runs[1:]:  # the first of equal totals wins, as in a sequential loop
        if run[0] < best[0]:
            best = run
    return best[1], best[2]


def _batched_replicates(rows: MatrixRows, inits: list[np.ndarray], max_iter: int,
                        n_jobs: int) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Each replicate's (sum of distances, labels, centres), the replicates' rounds side by
    side (:func:`fastmice._lloyd_batch.batched_rounds`): in at most ``n_jobs`` batches in
    threads, each batch's products within :data:`_BATCH_PRODUCTS` entries."""
    at_once = min(max(1, _BATCH_PRODUCTS // (rows.n_rows * len(inits[0]))),
                  math.ceil(len(inits) / max(1, n_jobs)))

    def batch(first: int) -> list[tuple[float, np.ndarray, np.ndarray]]:
        return [(_sum_of_distances(rows, labels, centers), labels, centers) for labels, centers
                in batched_rounds(rows.X, inits[first:first + at_once], max_iter, rows.cosine)]

    batches = map_threads(batch, range(0, len(inits), at_once), n_jobs)
    return [run for runs in batches for run in runs]


def sampled_litekmeans(X, n_clusters: int, *, sample: np.ndarray | None,
                       full_rounds: int = 1, metric: str = "sqeuclidean", max_iter: int = 100,
                       n_init: int = 1, rng: np.random.Generator,
                       n_jobs: int | None = None, init: str = "random"
                       ) -> tuple[np.ndarray, np.ndarray]:
    """litekmeans whose rounds run on some rows only, then a few rounds on every row.

    Without ``sample`` this is :func:`litekmeans`. Otherwise the rounds and replicates run
    on the rows ``sample``; then litekmeans' rounds (assign every row, repair empty
    clusters, update the centres) continue on every row from the sample's best centres, at
    most ``full_rounds`` times or until the labels no longer change. The cost no longer
    grows with ``n_samples * max_iter * n_init`` but with ``n_samples * full_rounds``.

    Parameters and returns are those of :func:`litekmeans`, plus ``sample`` (sorted row
    indices, e.g. a uniform sample) and ``full_rounds`` (>= 1).
    """
    rows = _as_rows(X, metric)
    if sample is None:
        return litekmeans(rows, n_clusters, metric=metric, max_iter=max_iter, n_init=n_init,
                          rng=rng, n_jobs=n_jobs, init=init)
    _, centers = litekmeans(rows.subset(sample), n_clusters, metric=metric,
                            max_iter=max_iter, n_init=n_init, rng=rng, n_jobs=n_jobs,
                            init=init)
    return lloyd_rounds(rows, centers, full_rounds)


def lloyd_rounds(X, centers: np.ndarray, n_rounds: int, metric: str = "cosine"
                 ) -> tuple[np.ndarray, np.ndarray]:
    """litekmeans' rounds from given centres: at most ``n_rounds`` (>= 1), until stable.

    Parameters
    ----------
    X : ndarray, csr_matrix, MatrixRows or TransferRows of shape (n_samples, n_features)
    centers : ndarray of shape (n_clusters, n_features)
        Where the rounds start (e.g. a sample's centres, or a previous partition's).
    n_rounds : int
    metric : {"sqeuclidean", "cosine"}, default="cosine"

    Returns
    -------
    labels, centers : as :func:`litekmeans`.
    """
    rows = _as_rows(X, metric)
    n_clusters = len(centers)
    last = None
    labels = np.zeros(rows.n_rows, dtype=np.intp)
    for _ in range(max(1, n_rounds)):
        labels, val = rows.assign(centers)
        labels = _repair(rows, labels, val, n_clusters)
        previous, centers = centers, _centers(rows, labels, n_clusters)
        if last is not None and np.array_equal(labels, last):
            break
        if np.array_equal(centers, previous):
            # The next round would assign exactly as this one did and stop there. (Every
            # cluster a single row under Euclidean: anchors on fewer rows than p.)
            break
        last = labels
    return labels, centers
