"""The view-sharing bipartite graph of one view group (SPEC section 2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fastmice._anchors import (
    AnchorIndex,
    draw_candidates,
    fit_anchor_index,
    search_nearest_anchors,
)
from fastmice._blas import on_one_blas_thread
from fastmice._parallel import map_threads, team_size
from fastmice._specs import GRAPH_STREAM, ViewGroupSpec, group_rng
from fastmice._stages import stage

__all__ = ["GroupAnchors", "build_group_graph", "transform_group_graph"]

_EPS = np.finfo(np.float64).eps


@dataclass
class GroupAnchors:
    """What places samples in one group's graph: per member view, its anchor index and width.

    Attributes
    ----------
    members : list of AnchorIndex
        One per member view, in the order of ``spec.views``.
    sigmas : ndarray of shape (n_members,)
        Gaussian kernel width of each member (NaN for cosine members, which use no kernel).
    """

    members: list[AnchorIndex]
    sigmas: np.ndarray

    @property
    def n_columns(self) -> int:
        """Number of anchor columns of the group's graph."""
        return sum(len(m.anchors) for m in self.members)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat dict of arrays (for ``np.savez``; no pickle needed)."""
        arrays: dict[str, np.ndarray] = {"sigmas": self.sigmas}
        for i, m in enumerate(self.members):
            arrays[f"m{i}_anchors"] = m.anchors
            arrays[f"m{i}_rep_centers"] = m.rep_centers
            arrays[f"m{i}_rep_labels"] = m.rep_labels
            arrays[f"m{i}_neighborhoods"] = m.neighborhoods
            arrays[f"m{i}_cosine"] = np.array(m.cosine)
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> GroupAnchors:
        """Inverse of :meth:`to_arrays` (accepts a dict or an ``NpzFile``)."""
        sigmas = np.asarray(arrays["sigmas"])
        members = [
            AnchorIndex(
                anchors=np.asarray(arrays[f"m{i}_anchors"]),
                rep_centers=np.asarray(arrays[f"m{i}_rep_centers"]),
                rep_labels=np.asarray(arrays[f"m{i}_rep_labels"]),
                neighborhoods=np.asarray(arrays[f"m{i}_neighborhoods"]),
                cosine=bool(arrays[f"m{i}_cosine"]),
            )
            for i in range(len(sigmas))
        ]
        return cls(members, sigmas)


#: Rows of a view searched at a time: the more rows, the more share a nearest anchor and the
#: better its product with the anchor's neighbourhood (65,536 rows, about 65 an anchor with
#: p = 1000: 10 % less search time than 32,768 at 400k; the buffers are two blocks of the
#: sampled columns a thread).
SEARCH_BLOCK_ROWS = 65536
#: Rows whose sampled columns are gathered at a time: small enough to stay in cache
#: (gathering the sampled columns of a whole view at once is ten times slower).
_GATHER_ROWS = 4096


def _member_columns(Xs: Sequence, spec: ViewGroupSpec, member: int) -> tuple[object, np.ndarray]:
    """The member's whole view and its sampled feature columns."""
    X = Xs[spec.views[member]]
    columns = np.asarray(spec.feature_indices[member], dtype=np.intp)
    if X.shape[1] <= columns.max(initial=-1):
        raise ValueError(
            f"View {spec.views[member]} has {X.shape[1]} features but group "
            f"{spec.group_index} samples feature {columns.max()}; the view group specs were "
            "drawn for other data.")
    return X, columns


#: The precision of the graph step (anchors, distances, search) whatever the views': a
#: distance's rounding only decides near-ties of an approximate search, and single precision
#: halves the bytes moved and doubles the products' speed.
GRAPH_DTYPE = np.float32


def _restrict(X, columns: np.ndarray, rows: slice | np.ndarray,
              out: np.ndarray | None = None, root: bool = False):
    """Some rows of a view, restricted to the sampled columns (dense or CSR), in
    :data:`GRAPH_DTYPE`; with ``root`` (the ``"hellinger"`` metric), their element-wise
    square roots (negative values, which that metric refuses, as zeros).

    Dense rows are gathered a few thousand at a time, into ``out`` if given (a buffer reused
    from block to block: a new block-sized array each time costs its page faults).
    """
    if root:
        return _square_root(_restrict(X, columns, rows, out))
    if sp.issparse(X):
        return sp.csr_matrix(X[rows][:, columns], dtype=GRAPH_DTYPE)
    if not isinstance(rows, slice):
        return np.take(np.asarray(X[rows]), columns, axis=1).astype(GRAPH_DTYPE, copy=False)
    start, stop, _ = rows.indices(X.shape[0])
    if out is None:
        out = np.empty((stop - start, len(columns)), dtype=GRAPH_DTYPE)
    out = out[:stop - start]

    def gather(first: int) -> None:
        last = min(first + _GATHER_ROWS, stop)
        target = out[first - start:last - start]
        if hasattr(X, "take_columns"):  # a view on disk (a row reader) gathers them itself
            X.take_columns(first, last, columns, target)
        else:
            take_columns(np.asarray(X[first:last]), columns, target)

    # In a team's threads (fastmice._parallel), each piece into its own rows of ``out``.
    map_threads(gather, range(start, stop, _GATHER_ROWS), team_size())
    return out


def _square_root(block):
    """Element-wise square root of a restricted block (dense: in place, the block is a
    buffer of its own; CSR: new values, the structure may be shared with the view)."""
    if sp.issparse(block):
        block.data = np.sqrt(np.maximum(block.data, 0))
        return block
    return np.sqrt(np.maximum(block, 0, out=block), out=block)


def take_columns(rows: np.ndarray, columns: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``rows[:, columns]`` into ``out``, cast to its dtype; ``columns`` must be valid."""
    if out.dtype == rows.dtype:  # "clip": no bounds checks, several times faster
        return np.take(rows, columns, axis=1, out=out, mode="clip")
    # (np.take into another dtype casts what ``out`` held first: warnings on garbage.)
    out[...] = np.take(rows, columns, axis=1, mode="clip")
    return out


def _search_view(X, columns: np.ndarray, index: AnchorIndex, n_neighbors: int,
                 restricted=None, root: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`search_nearest_anchors` over every row of a view, block by block.

    ``restricted``, if given, is every row of the view already restricted to ``columns``
    (:func:`_restrict`), searched as it is when the view fits in one block.
    """
    rows = min(SEARCH_BLOCK_ROWS, X.shape[0])
    many_blocks = X.shape[0] > rows
    if restricted is not None and not many_blocks:
        work = None if sp.issparse(restricted) else np.empty_like(restricted)
        return search_nearest_anchors(restricted, index, n_neighbors, work, False)
    gathered = work = None
    if not sp.issparse(X):
        gathered = np.empty((rows, len(columns)), dtype=GRAPH_DTYPE)
        work = np.empty_like(gathered)
    parts = [search_nearest_anchors(
        _restrict(X, columns, slice(start, start + rows), gathered, root), index, n_neighbors,
        work,
        many_blocks) for start in range(0, X.shape[0], rows)]
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def _weights(distances: np.ndarray, sigma: float, cosine: bool) -> np.ndarray:
    """Edge weights (float64): Gaussian kernel or cosine similarity, L2-normalised rows,
    zeros -> eps."""
    distances = distances.astype(np.float64)
    weights = 1.0 - distances if cosine else np.exp(-(distances**2) / (2 * sigma**2))
    weights /= np.sqrt(np.einsum("ij,ij->i", weights, weights))[:, None] + _EPS
    weights[weights == 0] = _EPS
    return weights


def _graph_block(indices: np.ndarray, weights: np.ndarray, n_columns: int) -> sp.csr_matrix:
    n_samples, n_neighbors = indices.shape
    indptr = np.arange(0, n_samples * n_neighbors + 1, n_neighbors, dtype=np.int64)
    block = sp.csr_matrix((weights.ravel(), indices.ravel(), indptr),
                          shape=(n_samples, n_columns))
    block.sort_indices()
    return block


def _rows_for_member(X, columns: np.ndarray, index: AnchorIndex, n_neighbors: int,
                     sigma: float, empty: np.ndarray | None = None,
                     root: bool = False) -> sp.csr_matrix:
    with stage("search"):
        indices, distances = _search_view(X, columns, index, n_neighbors, root=root)
    with stage("graph"):
        weights = _weights(distances, sigma, index.cosine)
        if empty is not None:
            weights[empty] = _EPS
        return _graph_block(indices, weights, len(index.anchors))


def _member_graph(X, columns: np.ndarray, spec: ViewGroupSpec, m: int,
                  rng: np.random.Generator, empty: np.ndarray | None
                  ) -> tuple[sp.csr_matrix, AnchorIndex, float]:
    """One member view's block of the group graph, its anchor index and kernel width.

    ``empty`` (best mode): the view's all-zero rows, which draw no anchor, do not set the
    kernel width and get the weights of a row that informs nothing (machine epsilon).
    """
    cosine = spec.metrics[m] == "cosine"
    root = spec.metrics[m] == "hellinger"  # euclidean between the square roots
    with stage("anchors"):
        filled = None if empty is None or not empty.any() else np.flatnonzero(~empty)
        if filled is not None and filled.size == 0:
            filled = None
        if filled is None:
            candidates = draw_candidates(X.shape[0], spec.n_anchors, rng)
        else:
            candidates = filled[draw_candidates(filled.size, spec.n_anchors, rng)]
        # Every row is a candidate when N <= 10 p: if the view is then searched in one
        # block, its restriction to the sampled columns serves the search as well.
        every_row = candidates.size == X.shape[0]
        restricted = _restrict(X, columns, slice(None) if every_row else candidates,
                               root=root)
        index = fit_anchor_index(restricted, min(spec.n_anchors, candidates.size),
                                 spec.n_neighbors, cosine, rng)
        if not (every_row and X.shape[0] <= SEARCH_BLOCK_ROWS):
            restricted = None
    with stage("search"):
        indices, distances = _search_view(X, columns, index, spec.n_neighbors, restricted,
                                          root)
    with stage("graph"):
        kept = distances if filled is None else distances[filled]
        sigma = np.nan if cosine else float(np.mean(kept, dtype=np.float64)) + _EPS
        weights = _weights(distances, sigma, cosine)
        if filled is not None:
            weights[empty] = _EPS
        return _graph_block(indices, weights, len(index.anchors)), index, sigma


@on_one_blas_thread
def build_group_graph(Xs: Sequence, spec: ViewGroupSpec,
                      empty_rows: Sequence[np.ndarray | None] | None = None
                      ) -> tuple[sp.csr_matrix, GroupAnchors]:
    """Build the view-sharing bipartite graph of one view group.

    Parameters
    ----------
    Xs : list of ndarray or csr_matrix, each of shape (n_samples, n_features_v)
        All views of the data (validated, see :func:`fastmice.check_views`); only the group's
        member views are read.
    spec : ViewGroupSpec
    empty_rows : list of (ndarray of bool of shape (n_samples,) or None), optional
        Per view, its all-zero rows, to treat as missing (the best mode,
        :func:`fastmice._best.empty_rows`); default: every row is a point of every view.

    Returns
    -------
    graph : csr_matrix of shape (n_samples, n_anchor_columns)
        Sample-to-anchor weights; per member view ``n_neighbors`` entries a row, each member's
        row block unit L2 norm. Columns are the members' anchors, block after block.
    anchors : GroupAnchors
        Anchors, search structures and kernel widths, to place new samples with
        :func:`transform_group_graph`.
    """
    rng = group_rng(spec.seed, GRAPH_STREAM)
    members, sigmas, blocks = [], [], []
    for m in range(len(spec.views)):
        X, columns = _member_columns(Xs, spec, m)
        empty = None if empty_rows is None else empty_rows[spec.views[m]]
        block, index, sigma = _member_graph(X, columns, spec, m, rng, empty)
        blocks.append(block)
        members.append(index)
        sigmas.append(sigma)
    with stage("graph"):
        return sp.hstack(blocks, format="csr"), GroupAnchors(members, np.asarray(sigmas))


@on_one_blas_thread
def transform_group_graph(Xs: Sequence, spec: ViewGroupSpec, anchors: GroupAnchors,
                          empty_rows: Sequence[np.ndarray | None] | None = None
                          ) -> sp.csr_matrix:
    """Rows of a group's graph for (new) samples, with the group's fitted anchors and widths.

    Every row depends only on its own sample, so on the training samples this returns the
    rows of :func:`build_group_graph`'s graph, and a growing dataset can be placed batch by
    batch.

    Parameters
    ----------
    Xs : list of ndarray or csr_matrix, each of shape (n_new, n_features_v)
    spec : ViewGroupSpec
    anchors : GroupAnchors
    empty_rows : list of (ndarray of bool or None), optional
        As for :func:`build_group_graph`, of the new samples.

    Returns
    -------
    graph : csr_matrix of shape (n_new, anchors.n_columns)
    """
    blocks = [
        _rows_for_member(*_member_columns(Xs, spec, m), index, spec.n_neighbors, sigma,
                         None if empty_rows is None else empty_rows[spec.views[m]],
                         spec.metrics[m] == "hellinger")
        for m, (index, sigma) in enumerate(zip(anchors.members, anchors.sigmas, strict=True))
    ]
    return sp.hstack(blocks, format="csr")
