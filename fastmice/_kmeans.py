"""litekmeans: the k-means variant the official FastMICE code uses everywhere (SPEC section 5).

It differs from scikit-learn's ``KMeans`` on purpose: random-row initialisation (no k-means++),
stopping when the assignment no longer changes, empty clusters repaired by moving the worst-fitted
points into them, and replicates compared by the sum of *non-squared* distances.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

__all__ = ["litekmeans"]

#: n_samples * n_clusters from which replicates run in threads (below it, threads cost more).
_PARALLEL_WORK = 1_000_000


def row_sq_norms(X) -> np.ndarray:
    """Squared L2 norm of every row of a dense or CSR matrix."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def _dense_rows(X, rows: np.ndarray) -> np.ndarray:
    sub = X[rows]
    return sub.toarray() if sp.issparse(sub) else np.array(sub)


def _update_centers(X, labels: np.ndarray, n_clusters: int, cosine: bool) -> np.ndarray:
    """Mean of the members of each cluster (unit-normalised for cosine); empty clusters get 0."""
    n_samples = X.shape[0]
    indicator = sp.csr_matrix(
        (np.ones(n_samples, dtype=X.dtype), (labels, np.arange(n_samples))),
        shape=(n_clusters, n_samples),
    )
    sums = indicator @ X
    centers = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
    counts = np.bincount(labels, minlength=n_clusters).astype(X.dtype)
    centers /= np.maximum(counts, 1)[:, None]
    if cosine:
        norms = np.sqrt(np.einsum("ij,ij->i", centers, centers))
        centers /= np.where(norms > 0, norms, 1)[:, None]
    return centers


def _assign(X, centers: np.ndarray,
            center_sq: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre per row, and litekmeans' val (|c|^2 - 2x.c, or x.c for cosine)."""
    products = np.asarray(X @ centers.T)
    if center_sq is None:  # cosine: the largest dot product
        labels = np.argmax(products, axis=1)
    else:
        products *= -2
        products += center_sq[None, :]
        labels = np.argmin(products, axis=1)
    return labels, products[np.arange(products.shape[0]), labels]


def _single_run(X, n_clusters: int, cosine: bool, max_iter: int, init_rows: np.ndarray,
                x_sq: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    n_samples = X.shape[0]
    centers = _dense_rows(X, init_rows)
    last = None
    labels = np.zeros(n_samples, dtype=np.intp)
    for _ in range(max_iter):
        center_sq = None if cosine else np.einsum("ij,ij->i", centers, centers)
        labels, val = _assign(X, centers, center_sq)
        present = np.bincount(labels, minlength=n_clusters) > 0
        if not present.all():
            missing = np.flatnonzero(~present)
            # Worst-fitted points first: largest squared distance, or smallest similarity.
            badness = -(val + x_sq) if x_sq is not None else val
            order = np.argsort(badness, kind="stable")
            labels[order[: missing.size]] = missing
        centers = _update_centers(X, labels, n_clusters, cosine)
        if last is not None and np.array_equal(labels, last):
            break
        last = labels
    return labels, centers


def _sum_of_distances(X, labels: np.ndarray, centers: np.ndarray, cosine: bool,
                      x_sq: np.ndarray | None) -> float:
    assigned = np.asarray((X.multiply(centers[labels]) if sp.issparse(X) else X * centers[labels])
                          .sum(axis=1)).ravel()
    if cosine:
        return float(np.sum(1.0 - assigned))
    center_sq = np.einsum("ij,ij->i", centers, centers)[labels]
    return float(np.sum(np.sqrt(np.maximum(x_sq + center_sq - 2 * assigned, 0))))


def litekmeans(X, n_clusters: int, *, metric: str = "sqeuclidean", max_iter: int = 100,
               n_init: int = 1, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Cluster the rows of ``X`` exactly as Deng Cai's litekmeans does.

    Input is assumed validated: ``X`` is a float ndarray or CSR matrix of shape
    (n_samples, n_features) with ``n_samples >= n_clusters``.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features)
    n_clusters : int
    metric : {"sqeuclidean", "cosine"}, default="sqeuclidean"
        With "cosine", rows are assigned by the largest dot product with unit-norm centres
        (``X`` is *not* normalised here, as in the original).
    max_iter : int, default=100
        Maximum number of assignment and update rounds.
    n_init : int, default=1
        Replicates; the one with the smallest sum of within-cluster distances is kept.
    rng : numpy.random.Generator
        Source of the random initial rows.

    Returns
    -------
    labels : ndarray of shape (n_samples,)
        Labels in ``0..n_clusters-1``; every cluster is non-empty.
    centers : ndarray of shape (n_clusters, n_features)
        Centres after the last update.
    """
    if X.shape[0] < n_clusters:
        raise ValueError(f"n_samples={X.shape[0]} must be >= n_clusters={n_clusters} for k-means.")
    cosine = metric == "cosine"
    x_sq = None if cosine else row_sq_norms(X)
    # Every replicate's initial rows are drawn first, in replicate order: the replicates are
    # then independent and may run side by side with the same result.
    inits = [np.sort(rng.choice(X.shape[0], n_clusters, replace=False)) for _ in range(n_init)]
    if n_init == 1:
        return _single_run(X, n_clusters, cosine, max_iter, inits[0], x_sq)

    def replicate(init_rows: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        labels, centers = _single_run(X, n_clusters, cosine, max_iter, init_rows, x_sq)
        return _sum_of_distances(X, labels, centers, cosine, x_sq), labels, centers

    workers = min(n_init, os.cpu_count() or 1) if X.shape[0] * n_clusters >= _PARALLEL_WORK else 1
    if workers > 1:  # numpy and BLAS release the GIL on work of this size
        with ThreadPoolExecutor(max_workers=workers) as pool:
            runs = list(pool.map(replicate, inits))
    else:
        runs = [replicate(init_rows) for init_rows in inits]
    best = runs[0]
    for run in runs[1:]:  # the first of equal totals wins, as in a sequential loop
        if run[0] < best[0]:
            best = run
    return best[1], best[2]
