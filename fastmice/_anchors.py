"""Anchors by hybrid representative selection and the approximate K-nearest-anchor search.

SPEC sections 2.1 and 2.2. Kernels here assume validated input: ``X`` is one member view
already restricted to its sampled features, a float ndarray or CSR matrix. Under the cosine
metric, k-means runs on the raw rows (as the official code does) and distances are 1 - cos
with rows unit-normalised; an all-zero row has similarity 0 to everything (the official code
turns it into NaN distances).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fastmice._kmeans import litekmeans, row_sq_norms

__all__ = ["AnchorIndex", "fit_anchor_index", "search_nearest_anchors"]

# Rows per block when a samples-by-centres distance matrix is formed.
_BLOCK_ROWS = 16384


def _distances(X, Y: np.ndarray, cosine: bool, x_sq: np.ndarray | None = None) -> np.ndarray:
    """Distances between the rows of X and Y: Euclidean (not squared) or 1 - cos, clipped at 0."""
    products = np.asarray(X @ Y.T)
    if cosine:
        np.subtract(1, products, out=products)
    else:
        if x_sq is None:
            x_sq = row_sq_norms(X)
        products *= -2
        products += x_sq[:, None]
        products += np.einsum("ij,ij->i", Y, Y)[None, :]
    np.maximum(products, 0, out=products)
    if not cosine:
        np.sqrt(products, out=products)
    return products


def normalize_rows(X):
    """Unit-L2 rows (zero rows stay zero), dense or CSR."""
    norms = np.sqrt(row_sq_norms(X))
    scale = 1.0 / np.where(norms > 0, norms, 1.0)
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(scale.astype(X.dtype)) @ X)
    return X * scale[:, None].astype(X.dtype, copy=False)


@dataclass
class AnchorIndex:
    """The anchors of one member view and what the approximate search over them needs.

    Attributes
    ----------
    anchors : ndarray of shape (n_anchors, n_features)
    rep_centers : ndarray of shape (n_rep_clusters, n_features)
        Centres of the floor(sqrt(n_anchors)) clusters of anchors.
    rep_labels : ndarray of shape (n_anchors,)
        Rep-cluster of each anchor.
    neighborhoods : ndarray of shape (n_anchors, n_candidates)
        Each anchor's nearest anchors (itself first, normally): the candidates searched for a
        sample whose nearest anchor it is.
    cosine : bool
    """

    anchors: np.ndarray
    rep_centers: np.ndarray
    rep_labels: np.ndarray
    neighborhoods: np.ndarray
    cosine: bool


def fit_anchor_index(X, n_anchors: int, n_neighbors: int, cosine: bool,
                     rng: np.random.Generator) -> AnchorIndex:
    """Select anchors by hybrid selection and prepare the coarse-to-fine search.

    ``10 * n_anchors`` random candidate rows (at most all rows), k-means with 5 iterations
    to ``n_anchors`` centres; then ``floor(sqrt(n_anchors))`` rep-clusters of the anchors, and
    each anchor's ``10 * n_neighbors + 1`` nearest anchors (capped at ``n_anchors``, a
    deliberate deviation: the official code crashes there on tiny data).
    """
    n_samples = X.shape[0]
    n_anchors = min(n_anchors, n_samples)
    n_candidates = min(10 * n_anchors, n_samples)
    candidates = np.sort(rng.choice(n_samples, n_candidates, replace=False))
    metric = "cosine" if cosine else "sqeuclidean"
    _, anchors = litekmeans(X[candidates], n_anchors, metric=metric, max_iter=5, rng=rng)
    n_rep = max(1, math.isqrt(n_anchors))
    rep_labels, rep_centers = litekmeans(anchors, n_rep, metric=metric, max_iter=5, rng=rng)
    neighborhood_size = min(10 * n_neighbors + 1, n_anchors)
    anchor_distances = _distances(anchors, anchors, cosine)
    neighborhoods = np.argsort(anchor_distances, axis=1, kind="stable")[:, :neighborhood_size]
    return AnchorIndex(anchors, rep_centers, rep_labels.astype(np.int64),
                       neighborhoods.astype(np.int64), cosine)


def _grouped_blocks(X, groups: np.ndarray, n_groups: int, x_sq: np.ndarray | None):
    """Yield (group, rows, X rows, their squared norms) for each non-empty group.

    Rows are sorted by group once, so each block is a contiguous slice; blocks hold at most
    ``_BLOCK_ROWS`` rows (a large group comes in several blocks).
    """
    order = np.argsort(groups, kind="stable")
    bounds = np.searchsorted(groups[order], np.arange(n_groups + 1))
    X_sorted = X[order]
    sq_sorted = None if x_sq is None else x_sq[order]
    for group in np.flatnonzero(np.diff(bounds)):
        for start in range(bounds[group], bounds[group + 1], _BLOCK_ROWS):
            block = slice(start, min(start + _BLOCK_ROWS, bounds[group + 1]))
            yield (group, order[block], X_sorted[block],
                   None if sq_sorted is None else sq_sorted[block])


def search_nearest_anchors(X, index: AnchorIndex, n_neighbors: int
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Approximate nearest anchors of every row of ``X`` (coarse to fine).

    Each row's nearest rep-cluster centre; its nearest anchor among that rep-cluster's
    anchors; then its ``n_neighbors`` nearest among that anchor's neighbourhood. Rows are
    processed one rep-cluster at a time, with one distance matrix to all the anchors the
    rep-cluster's rows can reach, so the work is a few large matrix products.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features)
    index : AnchorIndex
    n_neighbors : int

    Returns
    -------
    indices : ndarray of shape (n_samples, n_neighbors)
        Anchor indices, nearest first, distinct within a row.
    distances : ndarray of shape (n_samples, n_neighbors)
        Euclidean distances (not squared), or 1 - cos.
    """
    n_samples = X.shape[0]
    n_neighbors = min(n_neighbors, index.neighborhoods.shape[1])
    if index.cosine:
        X = normalize_rows(X)
    x_sq = None if index.cosine else row_sq_norms(X)
    nearest_rep = np.empty(n_samples, dtype=np.int64)
    for start in range(0, n_samples, _BLOCK_ROWS):
        rows = slice(start, start + _BLOCK_ROWS)
        block_sq = None if x_sq is None else x_sq[rows]
        nearest_rep[rows] = np.argmin(
            _distances(X[rows], index.rep_centers, index.cosine, block_sq), axis=1)
    indices = np.empty((n_samples, n_neighbors), dtype=np.int64)
    distances = np.empty((n_samples, n_neighbors), dtype=np.float64)
    for rep, rows, X_block, block_sq in _grouped_blocks(X, nearest_rep, len(index.rep_centers),
                                                        x_sq):
        members = np.flatnonzero(index.rep_labels == rep)
        reachable = np.union1d(members, index.neighborhoods[members])
        dist = _distances(X_block, index.anchors[reachable], index.cosine, block_sq)
        member_columns = np.searchsorted(reachable, members)
        nearest = members[np.argmin(dist[:, member_columns], axis=1)]
        candidates = index.neighborhoods[nearest]
        candidate_dist = np.take_along_axis(dist, np.searchsorted(reachable, candidates), axis=1)
        best = np.argsort(candidate_dist, axis=1, kind="stable")[:, :n_neighbors]
        indices[rows] = np.take_along_axis(candidates, best, axis=1)
        distances[rows] = np.take_along_axis(candidate_dist, best, axis=1)
    return indices, distances
