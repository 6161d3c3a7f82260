"""Hybrid selection in kernel form: k-means of few rows through their Gram matrix.

When every row of a small data set is a candidate (N <= 10 p), hybrid selection clusters a
few hundred rows into almost as many anchors. With explicit centres each of its 5 rounds
costs a product of every candidate's features with every centre (``nnz(X) k``); in kernel
form a centre is the mean of its members, a row's product with it a mean of Gram entries,
and a round costs ``O(n^2)`` whatever the features or clusters. The anchors' own Gram
matrix, which the rep-cluster k-means and the anchors' neighbourhoods need, comes from the
same numbers. The explicit anchors, which the search uses, are then computed once.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fastmice._kmeans import _centers
from fastmice._rows import MatrixRows, repair_labels, stable_order

__all__ = ["anchors_by_gram", "few_enough_for_kernel_form", "gram_distances",
           "gram_litekmeans", "gram_pays", "mean_operator"]


#: Hybrid selection runs in kernel form for sparse candidates, at most this many...
GRAM_MAX_ROWS = 1024
#: ...when the anchors' own distances, a dense product of ``n_anchors^2 x n_features``
#: that the kernel form reads off the Gram matrix instead, outweigh this many times the
#: ``n^2`` entries the Gram matrix and each of its rounds cost (measured on the members of
#: 3Sources, Movies, NGs, Citeseer, WebKB and Reuters: the kernel form took 0.4-0.8x the
#: time above this, 1.0-2.0x well below it; for dense candidates, whose products BLAS
#: computes, it gained nothing).
_GRAM_WORTH = 200


def gram_pays(candidates, n_anchors: int) -> bool:
    """Whether hybrid selection is cheaper in kernel form for these candidates."""
    n_rows, n_features = candidates.shape
    return (sp.issparse(candidates) and n_rows <= GRAM_MAX_ROWS
            and n_anchors**2 * n_features >= _GRAM_WORTH * n_rows**2)


def anchors_by_gram(candidates, n_anchors: int, cosine: bool,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Hybrid selection's k-means in kernel form: the anchors and their Gram matrix.

    ``candidates`` are float32 (as :func:`fastmice._anchors.fit_anchor_index` hands them
    over). Returns the anchors (float32 centres of the candidates, as :func:`litekmeans`
    gives them) and ``anchors @ anchors.T``, read off the candidates' Gram matrix (float32
    products, as the explicit form's, then float64).
    """
    X = candidates
    # A sparse times a dense product: twice as fast as the sparse X X^T on 3Sources' members.
    dense_t = X.T.toarray() if sp.issparse(X) else np.ascontiguousarray(X.T)
    gram = np.asarray(X @ dense_t, dtype=np.float64)
    labels, products = gram_litekmeans(gram, n_anchors, cosine=cosine, max_iter=5, rng=rng)
    anchors = _centers(MatrixRows(candidates, cosine), labels, n_anchors)
    anchor_gram = np.asarray(mean_operator(labels, np.bincount(labels, minlength=n_anchors))
                             @ products)  # m_a . c_b
    if cosine:  # c_a . c_b = m_a . c_b / |m_a|, and m_a . c_a = |m_a|
        norms = np.diagonal(anchor_gram).copy()
        anchor_gram /= np.where(norms > 0, norms, 1)[:, None]
    return anchors, (anchor_gram + anchor_gram.T) / 2


def gram_distances(gram: np.ndarray, cosine: bool) -> np.ndarray:
    """Distances between rows from their Gram matrix (as :func:`_distances`, clipped at 0)."""
    if cosine:
        return np.maximum(1 - gram, 0)
    sq = np.diagonal(gram)
    return np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * gram, 0))


#: A mean operator is dense when its product with a Gram matrix costs at most this many
#: multiply-adds (n_clusters x n^2): below it BLAS beats building a sparse matrix (85 rows
#: into 9 clusters: 7 us against 32), above it the sparse product's n^2 adds win (169 into
#: 85: 45 us against 113).
_DENSE_OPERATOR = 2**19


def few_enough_for_kernel_form(n_rows: int, n_clusters: int) -> bool:
    """Whether k-means of rows whose Gram matrix is at hand costs less in kernel form: when
    its rounds' products are small dense ones (the rep-clusters of a few hundred anchors:
    a dozen small calls a round instead of some thirty)."""
    return n_clusters * n_rows**2 <= _DENSE_OPERATOR


def mean_operator(labels: np.ndarray, counts: np.ndarray) -> np.ndarray | sp.csr_matrix:
    """The (n_clusters, n_samples) matrix whose product with rows gives each cluster's mean.

    ``counts`` is ``np.bincount(labels, minlength=n_clusters)``; an empty cluster's row is
    zero. Dense when small, else CSR.
    """
    weights = 1.0 / counts[labels]
    if len(counts) * len(labels) ** 2 <= _DENSE_OPERATOR:
        operator = np.zeros((len(counts), len(labels)))
        operator[labels, np.arange(len(labels))] = weights
        return operator
    order = stable_order(labels, len(counts))
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_matrix((weights[order], order, indptr),
                         shape=(len(counts), len(labels)))


def gram_litekmeans(gram: np.ndarray, n_clusters: int, *, cosine: bool, max_iter: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """litekmeans on rows known only by their Gram matrix ``X X^T`` (kernel form).

    The same rounds as :func:`litekmeans` (its initial rows, drawn the same way, its
    assignment, empty-cluster repair and stopping rule), with every centre kept as the mean
    of its members: a row's product with a centre is a mean of Gram entries, so a round costs
    ``O(n^2)`` whatever the number of features or clusters. For few rows (every candidate
    of a small data set) this is far cheaper than the products with explicit centres.

    Parameters
    ----------
    gram : ndarray of shape (n_samples, n_samples)
        ``X X^T`` of the rows to cluster.
    n_clusters : int
    cosine : bool
        Cosine litekmeans (centres unit-normalised; the first round uses the raw rows).
    max_iter : int
    rng : numpy.random.Generator

    Returns
    -------
    labels : ndarray of shape (n_samples,)
        The last assignment, repaired as litekmeans' (a cluster the repair empties again
        stays empty, with a zero centre).
    center_products : ndarray of shape (n_samples, n_clusters)
        Each row's product with each centre after the last update (``X C^T``).
    """
    n = gram.shape[0]
    if n < n_clusters:
        raise ValueError(f"n_samples={n} must be >= n_clusters={n_clusters} for k-means.")
    init = np.sort(rng.choice(n, n_clusters, replace=False))
    sq_norms = np.diagonal(gram)
    products, center_sq = gram[:, init], sq_norms[init]
    everyone = np.arange(n)
    last = None
    for round_ in range(max(1, max_iter)):
        if cosine:
            labels = np.argmax(products, axis=1)
            val = products[everyone, labels]
        else:
            scores = center_sq[None, :] - 2 * products
            labels = np.argmin(scores, axis=1)
            val = scores[everyone, labels]
        labels = repair_labels(labels, val if cosine else -(val + sq_norms), n_clusters)
        counts = np.bincount(labels, minlength=n_clusters)
        means = mean_operator(labels, counts)
        counts = np.maximum(counts, 1)  # a cluster the repair emptied again: a zero centre
        products = np.asarray(means @ gram).T  # (n, k): x_i . m_c (gram is symmetric)
        center_sq = np.bincount(labels, weights=products[everyone, labels],
                                minlength=n_clusters) / counts  # |m_c|^2
        if cosine:
            norms = np.sqrt(np.maximum(center_sq, 0))
            products /= np.where(norms > 0, norms, 1)[None, :]
        if last is not None and np.array_equal(labels, last):
            break
        if round_ == 0 and not cosine and np.array_equal(labels[init], everyone[:n_clusters]) \
                and (counts == 1).all():
            break  # every centre is still its initial row: the next round assigns the same
        last = labels
    return labels, products
