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
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fastmice._gram import (
    anchors_by_gram,
    few_enough_for_kernel_form,
    gram_distances,
    gram_litekmeans,
    gram_pays,
)
from fastmice._kmeans import _centers, litekmeans
from fastmice._parallel import map_threads, team_size
from fastmice._rows import MatrixRows, row_sq_norms, stable_order

__all__ = ["AnchorIndex", "draw_candidates", "fit_anchor_index", "search_nearest_anchors"]


def _distances(X, Y: np.ndarray, cosine: bool, x_sq: np.ndarray | None = None,
               y_sq: np.ndarray | None = None, y_t: np.ndarray | None = None) -> np.ndarray:
    """Distances between the rows of X and Y: Euclidean (not squared) or 1 - cos, clipped at 0.

    ``y_t``, if given, is ``Y.T`` as a C-contiguous array (a sparse ``X`` times ``Y.T``
    copies ``Y.T`` into that order first).
    """
    if not cosine:
        x_sq = row_sq_norms(X) if x_sq is None else x_sq
        y_sq = np.einsum("ij,ij->i", Y, Y) if y_sq is None else y_sq
    products = np.asarray(X @ (Y.T if y_t is None else y_t))
    return _finish_distances(products, cosine, x_sq, None if cosine else y_sq[None, :])


def _finish_distances(products: np.ndarray, cosine: bool, x_sq: np.ndarray | None,
                      y_sq: np.ndarray | None) -> np.ndarray:
    """Distances from dot products, in place: sqrt(|x|^2 + |y|^2 - 2 x.y) or 1 - x.y, >= 0.

    ``y_sq`` broadcasts against ``products`` (one row for all, or one per row).
    """
    if cosine:
        np.subtract(1, products, out=products)
    else:
        products *= -2
        products += x_sq[:, None]
        products += y_sq
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

    @cached_property
    def anchor_sq_norms(self) -> np.ndarray:
        """Squared norm of every anchor."""
        return np.einsum("ij,ij->i", self.anchors, self.anchors)

    @cached_property
    def transposed(self) -> tuple[np.ndarray, np.ndarray]:
        """``anchors.T`` and ``rep_centers.T``, C-contiguous (for sparse rows' products)."""
        return np.ascontiguousarray(self.anchors.T), np.ascontiguousarray(self.rep_centers.T)

    def rep_candidate_rows(self, rep: int, keep: bool) -> np.ndarray:
        """The neighbourhoods' rows of a rep-cluster's anchors, shape (n_members,
        n_candidates, n_features); gathered once and kept with ``keep`` (a view searched in
        many blocks), else gathered anew (one block: the gathers add up to less)."""
        cache = self.__dict__.setdefault("_candidate_rows", {})
        if rep in cache:
            return cache[rep]
        members = self.rep_members[rep][0]
        rows = np.take(self.anchors, self.neighborhoods[members], axis=0)
        if keep:
            cache[rep] = rows
        return rows

    @cached_property
    def rep_members(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per rep-cluster: its anchors' indices, rows and squared norms."""
        members = [np.flatnonzero(self.rep_labels == rep) for rep in range(len(self.rep_centers))]
        return [(m, self.anchors[m], self.anchor_sq_norms[m]) for m in members]


def draw_candidates(n_samples: int, n_anchors: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted rows that hybrid selection clusters: ``10 * n_anchors`` of them, at most all."""
    n_candidates = min(10 * min(n_anchors, n_samples), n_samples)
    return np.sort(rng.choice(n_samples, n_candidates, replace=False))


def fit_anchor_index(candidates, n_anchors: int, n_neighbors: int, cosine: bool,
                     rng: np.random.Generator) -> AnchorIndex:
    """Select anchors by hybrid selection and prepare the coarse-to-fine search.

    k-means with 5 iterations of the candidate rows (:func:`draw_candidates`) to
    ``n_anchors`` centres; then ``floor(sqrt(n_anchors))`` rep-clusters of the anchors, and
    each anchor's ``10 * n_neighbors + 1`` nearest anchors (capped at ``n_anchors``, a
    deliberate deviation: the official code crashes there on tiny data).

    Parameters
    ----------
    candidates : ndarray or csr_matrix of shape (n_candidates, n_features)
    n_anchors : int
        At most ``n_candidates``.
    n_neighbors : int
    cosine : bool
    rng : numpy.random.Generator

    Returns
    -------
    index : AnchorIndex
    """
    metric = "cosine" if cosine else "sqeuclidean"
    candidates = candidates.astype(np.float32, copy=False)
    n_rep = max(1, math.isqrt(n_anchors))
    neighborhood_size = min(10 * n_neighbors + 1, n_anchors)
    kernel_form = gram_pays(candidates, n_anchors)
    if kernel_form:
        anchors, anchor_gram = anchors_by_gram(candidates, n_anchors, cosine, rng)
    else:
        _, anchors = litekmeans(candidates, n_anchors, metric=metric, max_iter=5, rng=rng)
        anchors64 = anchors.astype(np.float64)
        anchor_gram = anchors64 @ anchors64.T
    if kernel_form or few_enough_for_kernel_form(n_anchors, n_rep):
        rep_labels, _ = gram_litekmeans(anchor_gram, n_rep, cosine=cosine, max_iter=5, rng=rng)
        rep_centers = _centers(MatrixRows(anchors, cosine), rep_labels, n_rep)
    else:
        rep_labels, rep_centers = litekmeans(anchors, n_rep, metric=metric, max_iter=5,
                                             rng=rng)
    neighborhoods = _first_of_stable_argsort(gram_distances(anchor_gram, cosine),
                                             neighborhood_size)
    return AnchorIndex(anchors, rep_centers, rep_labels.astype(np.int64),
                       neighborhoods.astype(np.int64), cosine)


def _first_of_stable_argsort(values: np.ndarray, m: int) -> np.ndarray:
    """``np.argsort(values, axis=1, kind="stable")[:, :m]``, without sorting whole rows.

    Each row's ``m`` smallest (the earlier column first among equals) are found by a
    partition, then only they are sorted: several times faster when ``m`` is a small part
    of the row (51 of 1000 anchors: about a fifth of the time).
    """
    n_rows, n_columns = values.shape
    if 4 * m >= n_columns:
        return np.argsort(values, axis=1, kind="stable")[:, :m]
    threshold = np.partition(values, m - 1, axis=1)[:, m - 1:m]
    chosen = values <= threshold
    # A row whose m-th smallest value recurs beyond the m (rare but for sparse cosine rows)
    # keeps the first of those equal to it.
    unsure = np.flatnonzero(np.count_nonzero(chosen, axis=1) > m)
    if unsure.size:
        chosen[unsure] = _first_m_smallest(values[unsure], threshold[unsure], m)
    columns = (np.flatnonzero(chosen).reshape(n_rows, m)
               - np.arange(0, n_rows * n_columns, n_columns)[:, None])  # ascending by row
    order = np.argsort(np.take_along_axis(values, columns, axis=1), axis=1, kind="stable")
    return np.take_along_axis(columns, order, axis=1)


def _first_m_smallest(values: np.ndarray, threshold: np.ndarray, m: int) -> np.ndarray:
    """Mask of each row's values below ``threshold`` (its m-th smallest) and, of those equal
    to it, the first ones by column: m in every row."""
    below = values < threshold
    tied = values == threshold
    wanted_ties = m - below.sum(axis=1, keepdims=True)
    return below | (tied & (np.cumsum(tied, axis=1) <= wanted_ties))


def search_nearest_anchors(X, index: AnchorIndex, n_neighbors: int,
                           work: np.ndarray | None = None,
                           many_blocks: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Approximate nearest anchors of every row of ``X`` (coarse to fine).

    Each row's nearest rep-cluster centre; its nearest anchor among that rep-cluster's
    anchors; then its ``n_neighbors`` nearest among that anchor's neighbourhood. Only those
    distances are computed: the rows are grouped by rep-cluster (one product with its
    anchors each), then, within it, by nearest anchor (one product with its neighbourhood
    each).
    Meant for a block of some ten thousand rows (the caller streams a view block by block):
    the more rows an anchor gets, the better the products.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features)
    index : AnchorIndex
    n_neighbors : int
    work : ndarray, optional
        A dense buffer of at least ``X``'s shape and dtype to gather a rep-cluster's rows
        into (reused from block to block, it spares the allocation).
    many_blocks : bool, default=False
        ``X`` is one of many blocks of a view: gather every anchor's neighbourhood once.

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
    nearest_rep = np.argmin(_distances(
        X, index.rep_centers, index.cosine, x_sq,
        y_t=index.transposed[1] if sp.issparse(X) else None), axis=1)
    if n_samples * len(index.anchors) <= ONE_PRODUCT_MAX and (
            sp.issparse(X) or n_samples <= ONE_PRODUCT_ROWS_PER_REP * len(index.rep_centers)):
        return _search_in_one_product(X, x_sq, index, nearest_rep, n_neighbors)
    order = stable_order(nearest_rep, len(index.rep_centers))
    bounds = np.searchsorted(nearest_rep[order], np.arange(len(index.rep_centers) + 1))
    indices = np.empty((n_samples, n_neighbors), dtype=np.int64)
    distances = np.empty((n_samples, n_neighbors), dtype=np.float64)

    def search_rep(rep: int) -> None:
        rows = order[bounds[rep]:bounds[rep + 1]]
        # One rep-cluster's rows at a time: a gather that stays in cache, where sorting the
        # whole block first cost as much as the products it saved.
        if sp.issparse(X) or work is None:
            X_rep = X[rows]
        else:  # each rep-cluster its own part of the buffer: they may run side by side
            X_rep = np.take(X, rows, axis=0, out=work[bounds[rep]:bounds[rep + 1]],
                            mode="clip")
        within, found, found_dist = _search_rep(
            X_rep, None if x_sq is None else x_sq[rows], index, rep, n_neighbors, many_blocks)
        positions = rows[within]
        indices[positions], distances[positions] = found, found_dist

    # In a team's threads (fastmice._parallel): a row's search never depends on another's.
    map_threads(search_rep, np.flatnonzero(np.diff(bounds)), team_size())
    return indices, distances


#: Largest rows x anchors whose distances the search computes all at once (small data): one
#: product and a few whole-array steps instead of a dozen small ones per rep-cluster, whose
#: Python overhead is most of the search on a few hundred rows (3Sources: 3.7x faster).
ONE_PRODUCT_MAX = 2**20
#: Dense rows are searched so only when a rep-cluster gets at most this many rows on
#: average: beyond it the elementwise work on every distance costs more than the overhead
#: it saves (measured on mfeat, 100Leaves, CUB, MSRCv1).
ONE_PRODUCT_ROWS_PER_REP = 32


def _search_in_one_product(X, x_sq: np.ndarray | None, index: AnchorIndex,
                           nearest_rep: np.ndarray, n_neighbors: int
                           ) -> tuple[np.ndarray, np.ndarray]:
    """The coarse-to-fine search read off every row's distances to every anchor.

    The same choices as the search by rep-cluster: the nearest anchor among those of the
    row's rep-cluster (the first of equals, by anchor index), then the nearest
    ``n_neighbors`` of its neighbourhood.
    """
    distances = _distances(X, index.anchors, index.cosine, x_sq, index.anchor_sq_norms,
                           index.transposed[0] if sp.issparse(X) else None)
    in_rep = index.rep_labels[None, :] == nearest_rep[:, None]
    nearest = np.argmin(np.where(in_rep, distances, np.inf), axis=1)
    candidates = index.neighborhoods[nearest]
    dist = np.take_along_axis(distances, candidates, axis=1)
    best = _smallest(dist, n_neighbors)
    within = np.arange(len(candidates))[:, None]
    return candidates[within, best], dist[within, best]


def _search_rep(X, x_sq: np.ndarray | None, index: AnchorIndex, rep: int,
                n_neighbors: int, many_blocks: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The search for rows whose nearest rep-cluster is ``rep``.

    Returns the rows' order (by nearest anchor) and, in that order, their neighbours'
    indices and distances.
    """
    members, anchors, sq_norms = index.rep_members[rep]
    nearest = np.argmin(_distances(X, anchors, index.cosine, x_sq, sq_norms), axis=1)
    order = stable_order(nearest, len(anchors))
    X_sorted, nearest = X[order], nearest[order]  # nearest: position among the members
    candidates = index.neighborhoods[members[nearest]]
    few_rows = not many_blocks and len(order) < _FEW_ROWS_PER_MEMBER * len(members)
    if sp.issparse(X) or few_rows:
        # One product with every anchor the rows can reach: for sparse rows, and for few
        # dense ones of a view searched in one block (small data), where gathering each
        # anchor's neighbourhood costs more than the products it would save.
        reach = np.unique(index.neighborhoods[members])
        every = np.asarray(X_sorted @ index.anchors[reach].T)
        products = np.take_along_axis(every, np.searchsorted(reach, candidates), axis=1)
    else:
        products = _neighbourhood_products(X_sorted, nearest, len(members),
                                           index.rep_candidate_rows(rep, many_blocks))
    dist = _finish_distances(products, index.cosine, None if x_sq is None else x_sq[order],
                             index.anchor_sq_norms[candidates])
    best = _smallest(dist, n_neighbors)
    within = np.arange(len(order))[:, None]
    return order, candidates[within, best], dist[within, best]


#: A rep-cluster with fewer rows than this many per anchor gets one product with every
#: anchor its rows can reach instead of one per anchor's neighbourhood.
_FEW_ROWS_PER_MEMBER = 4
#: Anchors with more rows than this get a product of their own; the others share one
#: batched product, their rows padded to the same count (the batch's padding costs more
#: than a small product beyond this).
_OWN_PRODUCT_ROWS = 24


def _neighbourhood_products(X, nearest: np.ndarray, n_members: int,
                            candidate_rows: np.ndarray) -> np.ndarray:
    """Dot products of each row with the neighbourhood of its nearest anchor.

    ``X`` (n, d), dense, has its rows sorted by ``nearest`` (each row's anchor, as a
    position among ``n_members``); ``candidate_rows`` (n_members, n_candidates, d). Returns
    (n, n_candidates). A few large products and one batched product of the small ones keep the
    Python loop short (it holds the GIL, which the other groups' threads wait for).
    """
    counts = np.bincount(nearest, minlength=n_members)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    products = np.empty((X.shape[0], candidate_rows.shape[1]),
                        dtype=np.result_type(X.dtype, candidate_rows.dtype))
    own = counts > _OWN_PRODUCT_ROWS
    for member in np.flatnonzero(own):
        rows = slice(starts[member], starts[member] + counts[member])
        products[rows] = X[rows] @ candidate_rows[member].T
    small = ~own & (counts > 0)
    if small.any():
        # Every member gets a slot (zero rows for the others): candidate_rows is used as it
        # is, never copied (a copy per block cost more than the products).
        rows = np.flatnonzero(small[nearest])
        within = rows - starts[nearest[rows]]
        padded = np.zeros((n_members, counts[small].max(), X.shape[1]), dtype=X.dtype)
        padded[nearest[rows], within] = X[rows]
        batched = np.matmul(padded, candidate_rows.transpose(0, 2, 1))
        products[rows] = batched[nearest[rows], within]
    return products


def _smallest(values: np.ndarray, k: int) -> np.ndarray:
    """Column positions of the ``k`` smallest values of each row, smallest first.

    Ties go to the earlier column (as a stable sort, and the official code's repeated
    ``min``); ``k`` passes of argmin are several times faster than sorting every row.
    """
    values = values.copy()
    rows = np.arange(values.shape[0])
    positions = np.empty((values.shape[0], k), dtype=np.intp)
    for j in range(k):
        positions[:, j] = np.argmin(values, axis=1)
        values[rows, positions[:, j]] = np.inf
    return positions
