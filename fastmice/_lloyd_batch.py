"""litekmeans' rounds from several starts at once, over the same dense rows.

A k-means of a few thousand rows into some clusters (the consensus cuts' on small data)
spends most of a round on numpy's per-call cost, not on arithmetic, and holds the
interpreter while it does, so its replicates gain little from threads. Here every start
still running shares each step: one sort for all their centre sums, one product of a
cluster indicator with the rows, one argmax. Every number is the one a start computes alone
(:func:`fastmice._kmeans.lloyd_rounds`): its products with the rows are its own product, and
each centre sums its rows in row order (tested against one start at a time).
"""

from __future__ import annotations

import numpy as np

from fastmice._rows import cluster_indicator, cluster_means, repair_labels, row_sq_norms

__all__ = ["batched_rounds"]


def _assign(X: np.ndarray, centers: list[np.ndarray], cosine: bool
            ) -> tuple[np.ndarray, np.ndarray]:
    """Each start's labels and litekmeans' val (as :meth:`MatrixRows.assign`), shape
    (n_starts, n_rows) each."""
    products = np.empty((len(centers), X.shape[0], centers[0].shape[0]),
                        dtype=np.result_type(X, centers[0]))
    for start, C in enumerate(centers):
        np.matmul(X, C.T, out=products[start])
        if not cosine:
            products[start] *= -2
            products[start] += np.einsum("ij,ij->i", C, C)[None, :]
    labels = np.argmax(products, axis=2) if cosine else np.argmin(products, axis=2)
    return labels, np.take_along_axis(products, labels[:, :, None], axis=2)[:, :, 0]


def _centers(X: np.ndarray, labels: np.ndarray, n_clusters: int, cosine: bool
             ) -> np.ndarray:
    """Each start's centres (as :func:`fastmice._kmeans._centers`), shape (n_starts *
    n_clusters, n_features): the rows of every (start, cluster) summed in row order by one
    product with the indicator of all of them."""
    n_starts, n_rows = labels.shape
    keys = (labels + n_clusters * np.arange(n_starts)[:, None]).ravel()
    indicator = cluster_indicator(keys, n_starts * n_clusters, n_rows, X.dtype)
    return cluster_means(np.asarray(indicator @ X), np.diff(indicator.indptr), cosine)


def batched_rounds(X: np.ndarray, inits: list[np.ndarray], max_iter: int, cosine: bool
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`fastmice._kmeans.lloyd_rounds` from the rows ``inits[s]`` of ``X`` for every
    start ``s``, side by side.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
    inits : list of ndarray of shape (n_clusters,)
        Each start's initial rows.
    max_iter : int
    cosine : bool
        Assign by the largest dot product with unit-normalised centres.

    Returns
    -------
    runs : list of (labels, centers)
        Per start, in order: labels of shape (n_rows,), centres of shape (n_clusters,
        n_features), as a run of that start alone gives them.
    """
    n_clusters = len(inits[0])
    sq_norms = None if cosine else row_sq_norms(X)
    centers = [np.array(X[rows]) for rows in inits]
    last: list[np.ndarray | None] = [None] * len(inits)
    runs: list = [None] * len(inits)
    running = list(range(len(inits)))
    for _ in range(max(1, max_iter)):
        labels, val = _assign(X, [centers[s] for s in running], cosine)
        for i in range(len(running)):
            labels[i] = repair_labels(labels[i], val[i] if cosine else -(val[i] + sq_norms),
                                      n_clusters)
        updated = _centers(X, labels, n_clusters, cosine)
        still = []
        for i, start in enumerate(running):
            new = updated[i * n_clusters:(i + 1) * n_clusters]
            previous, centers[start] = centers[start], new
            runs[start] = (labels[i], new)  # kept if this start stops or the rounds run out
            if not ((last[start] is not None and np.array_equal(labels[i], last[start])) or
                    np.array_equal(new, previous)):
                last[start] = labels[i]
                still.append(start)
        running = still
        if not running:
            break
    return runs
