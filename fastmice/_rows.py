"""The rows litekmeans clusters: a matrix's, or a transfer-cut embedding's, kept implicit.

:class:`MatrixRows` are the rows of a dense or CSR matrix. :class:`TransferRows` are the
rows ``normalise(R_i U)`` of the embedding Tcut transfers to the rows of a bipartite graph,
never formed all at once: with ``R`` sparse (a few entries a row) and ``U`` small, an
assignment costs ``O(nnz(R) k + n_columns k^2)`` instead of ``O(N k^2)``. Both offer what
a litekmeans round needs (take, assign, centre sums, subsets).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fastmice._parallel import BLOCK_ROWS, by_column_parts, map_blocks

__all__ = ["MatrixRows", "Rows", "TransferRows", "cluster_indicator", "cluster_means",
           "repair_labels", "row_sq_norms", "stable_order"]

#: Most columns for which TransferRows forms U U^T to get its row norms.
_GRAM_MAX = 4096
#: A sample of TransferRows is formed whole when it has at most this many entries and its
#: dimension is below this multiple of the entries per row of R (a dense product per entry
#: is about this much cheaper than a sparse one).
_DENSE_SUBSET = 2**25
_DENSE_GAIN = 50
#: Dense rows of at most this many entries are summed per cluster with ``np.add.at`` (the
#: same additions in the same order as the indicator product; 169 x 13: 54 us against 132).
_ADD_AT_MAX = 8192
#: Clusters per block of TransferRows' centre sums (64: a dense block's product runs at
#: twice the speed of 16's).
_CLUSTER_BLOCK = 64
#: Share of entries from which a block of those sums is multiplied with U as a dense matrix.
_DENSE_SUMS_SHARE = 1 / 25
#: Most clusters x columns for which the per-cluster sums of R's rows are added up densely
#: (2**24 float64: 128 MiB); beyond, the product of the cluster indicator with R, by blocks.
_DENSE_SUMS_MAX = 2**24
#: Entries of R added into those sums at a time.
_SUMS_ENTRIES = 2**20
#: Rows of U a piece of ``U @ M`` covers (U has a row per column of the graph: ~10^4).
_TIMES_ROWS = 512


def stable_order(labels: np.ndarray, n_labels: int) -> np.ndarray:
    """``np.argsort(labels, kind="stable")`` of labels in ``0..n_labels-1``: the rows by
    label, in row order within each; on 16-bit labels where they fit (numpy sorts those by
    radix, five times faster on a few thousand rows)."""
    if n_labels <= np.iinfo(np.uint16).max + 1:
        labels = labels.astype(np.uint16)
    return np.argsort(labels, kind="stable")


def cluster_indicator(keys: np.ndarray, n_keys: int, n_rows: int, dtype) -> sp.csr_matrix:
    """The 0/1 matrix of shape (n_keys, n_rows) whose product with rows sums, for each key,
    the rows ``i % n_rows`` of its positions ``i`` in ``keys``, in position order.

    ``keys`` of length ``n_rows`` are one clustering's labels; of length ``s * n_rows``,
    ``s`` clusterings' labels, each offset by its own multiple of its number of clusters.
    """
    indptr = np.zeros(n_keys + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n_keys), out=indptr[1:])
    return sp.csr_matrix((np.ones(len(keys), dtype=dtype), stable_order(keys, n_keys) % n_rows,
                          indptr), shape=(n_keys, n_rows))


def cluster_means(sums: np.ndarray, counts: np.ndarray, cosine: bool) -> np.ndarray:
    """Per-cluster sums divided by the clusters' sizes (an empty cluster's stays 0), and
    unit-normalised for cosine; in place, returned."""
    sums /= np.maximum(counts.astype(sums.dtype), 1)[:, None]
    if cosine:
        norms = np.sqrt(np.einsum("ij,ij->i", sums, sums))
        sums /= np.where(norms > 0, norms, 1)[:, None]
    return sums


def repair_labels(labels: np.ndarray, badness: np.ndarray, n_clusters: int) -> np.ndarray:
    """Move the rows with the lowest ``badness`` into empty clusters, one each."""
    present = np.bincount(labels, minlength=n_clusters) > 0
    if present.all():
        return labels
    missing = np.flatnonzero(~present)
    labels = labels.copy()
    labels[np.argsort(badness, kind="stable")[: missing.size]] = missing
    return labels


def row_sq_norms(X) -> np.ndarray:
    """Squared L2 norm of every row of a dense or CSR matrix."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


class MatrixRows:
    """The rows of a dense or CSR matrix, as litekmeans sees them.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features)
    cosine : bool
        Assign by the largest dot product (centres are unit-normalised) instead of the
        smallest squared Euclidean distance.
    n_jobs : int, default=1
        Threads over row blocks of an assignment (dense rows; the result does not depend
        on it: the blocks do not, and each row's products are the same in a block as in
        one product, checked in ``tests/unit/test_threads.py``).
    """

    def __init__(self, X, cosine: bool, n_jobs: int = 1) -> None:
        self.X = X
        self.cosine = cosine
        self.n_jobs = n_jobs

    @cached_property
    def sq_norms(self) -> np.ndarray | None:
        """Squared norm of every row (None under cosine), computed when first needed."""
        return None if self.cosine else row_sq_norms(self.X)

    @property
    def n_rows(self) -> int:
        return self.X.shape[0]

    def take(self, rows: np.ndarray) -> np.ndarray:
        """Dense copies of some rows, shape (len(rows), n_features)."""
        sub = self.X[rows]
        return sub.toarray() if sp.issparse(sub) else np.array(sub)

    def subset(self, rows: np.ndarray) -> MatrixRows:
        return MatrixRows(self.X[rows], self.cosine, self.n_jobs)

    def assign(self, centers: np.ndarray, n_jobs: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Nearest centre per row, and litekmeans' val (|c|^2 - 2x.c, or x.c for cosine).

        Dense rows are assigned in blocks of ``BLOCK_ROWS`` (in ``n_jobs`` threads,
        default the rows' own ``n_jobs``), sparse ones in one product.
        """
        n_jobs = self.n_jobs if n_jobs is None else n_jobs
        center_sq = None if self.cosine else np.einsum("ij,ij->i", centers, centers)
        C_t = centers.T

        def block(rows: slice) -> tuple[np.ndarray, np.ndarray]:
            products = np.asarray(self.X[rows] @ C_t)
            if self.cosine:  # the largest dot product
                labels = np.argmax(products, axis=1)
            else:
                products *= -2
                products += center_sq[None, :]
                labels = np.argmin(products, axis=1)
            return labels, products[np.arange(products.shape[0]), labels]

        if sp.issparse(self.X) or self.n_rows <= BLOCK_ROWS:
            return block(slice(None))
        parts = map_blocks(block, self.n_rows, n_jobs)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def center_sums(self, labels: np.ndarray, n_clusters: int) -> np.ndarray:
        """Sum of the rows of each cluster, shape (n_clusters, n_features).

        Each sum adds its rows one after the other in row order (what a product with the
        cluster indicator computes), so the result does not depend on the route taken.
        """
        X = self.X
        if sp.issparse(X):  # straight into the dense sums: no sparse product and result
            sums = np.zeros((n_clusters, X.shape[1]), dtype=X.dtype)
            rows = np.repeat(labels * X.shape[1], np.diff(X.indptr))
            np.add.at(sums.reshape(-1), rows + X.indices, X.data)
            return sums
        if X.size <= _ADD_AT_MAX:  # few rows: scipy's per-call cost is most of the product
            sums = np.zeros((n_clusters, X.shape[1]), dtype=X.dtype)
            np.add.at(sums, labels, X)
            return sums
        indicator = cluster_indicator(labels, n_clusters, self.n_rows, X.dtype)
        # By parts of the columns in threads: every entry is the same sum in the same order.
        return by_column_parts(lambda part: np.asarray(indicator @ X[:, part]), X.shape[1],
                               self.n_jobs)

    def assigned_products(self, labels: np.ndarray, centers: np.ndarray) -> np.ndarray:
        """x_i . c_{labels_i} for every row."""
        chosen = centers[labels]
        products = self.X.multiply(chosen) if sp.issparse(self.X) else self.X * chosen
        return np.asarray(products.sum(axis=1)).ravel()


class TransferRows:
    """Rows ``E_i = R_i U / (|R_i U| + 1e-10)`` of a transfer-cut embedding, never formed whole.

    Always clustered by cosine. Products with the centres are computed as ``R (U C^T)`` in
    blocks of rows, in float32 (the labels are argmaxes of these), or, while the row norms
    are not known yet, as ``(R U) C^T``, which gives the norms on the way.

    Parameters
    ----------
    R : csr_matrix of shape (n_samples, n_columns)
        Row-stochastic sample-to-column weights (``Dx^-1 B``).
    U : ndarray of shape (n_columns, n_dims)
        Column-side embedding.
    norms : ndarray of shape (n_samples,), optional
        ``|R_i U| + 1e-10``, if known.
    n_jobs : int, default=1
        Threads over row blocks.
    """

    cosine = True
    sq_norms = None

    def __init__(self, R: sp.csr_matrix, U: np.ndarray, norms: np.ndarray | None = None,
                 n_jobs: int = 1) -> None:
        self.R = R
        self.U = U
        self.n_jobs = n_jobs
        self._R32 = R.astype(np.float32) if R.dtype != np.float32 else R
        self._norms = self._gram_norms() if norms is None else norms

    @property
    def n_rows(self) -> int:
        return self.R.shape[0]

    @property
    def norms(self) -> np.ndarray:
        """``|R_i U| + 1e-10`` of every row (computed on first use)."""
        if self._norms is None:
            def block(rows: slice) -> np.ndarray:
                E = np.asarray(self.R[rows] @ self.U)
                return np.sqrt(np.einsum("ij,ij->i", E, E))

            self._norms = np.concatenate(map_blocks(block, self.n_rows, self.n_jobs)) + 1e-10
        return self._norms

    def _gram_norms(self) -> np.ndarray | None:
        """Row norms from ``U U^T`` when rows have few, equally many entries (else None)."""
        R, U = self.R, self.U
        counts = np.diff(R.indptr)
        if not len(counts) or counts.min() != counts.max() or R.shape[1] > _GRAM_MAX:
            return None
        # |R_i U|^2 = sum_ab r_ia r_ib (U U^T)_ab over the row's few entries.
        gram = U @ U.T
        width = int(counts[0])
        columns = R.indices.reshape(-1, width)
        weights = R.data.reshape(-1, width)

        def block(rows: slice) -> np.ndarray:
            c, w = columns[rows], weights[rows]
            return np.einsum("ia,ib,iab->i", w, w, gram[c[:, :, None], c[:, None, :]])

        squares = np.concatenate(map_blocks(block, self.n_rows, self.n_jobs))
        return np.sqrt(np.maximum(squares, 0)) + 1e-10

    def take(self, rows: np.ndarray) -> np.ndarray:
        def block(part: slice) -> np.ndarray:  # each row's product as in one product
            chosen = rows[part]
            E = np.asarray(self.R[chosen] @ self.U)
            norms = self._norms[chosen] if self._norms is not None else np.sqrt(
                np.einsum("ij,ij->i", E, E)) + 1e-10
            return E / norms[:, None]

        rows = np.asarray(rows)
        if len(rows) <= BLOCK_ROWS:
            return block(slice(None))
        return np.concatenate(map_blocks(block, len(rows), self.n_jobs))

    def subset(self, rows: np.ndarray) -> MatrixRows | TransferRows:
        """Some of the rows; formed whole (float32) where dense products are cheaper."""
        n_dims = self.U.shape[1]
        nnz_per_row = self.R.nnz / max(self.n_rows, 1)
        if len(rows) * n_dims <= _DENSE_SUBSET and n_dims < _DENSE_GAIN * nnz_per_row:
            return MatrixRows(self.take(rows).astype(np.float32), cosine=True,
                              n_jobs=self.n_jobs)
        return TransferRows(self.R[rows], self.U,
                            None if self._norms is None else self._norms[rows], self.n_jobs)

    def assign(self, centers: np.ndarray, n_jobs: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        n_jobs = self.n_jobs if n_jobs is None else n_jobs
        if self._norms is None:
            return self._assign_forming(centers, n_jobs)
        G = self._times(centers.T, n_jobs).astype(np.float32)

        def block(rows: slice) -> tuple[np.ndarray, np.ndarray]:
            scores = np.asarray(self._R32[rows] @ G)
            labels = np.argmax(scores, axis=1)
            return labels, scores[np.arange(len(labels)), labels] / self._norms[rows]

        parts = map_blocks(block, self.n_rows, n_jobs)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def _assign_forming(self, centers: np.ndarray, n_jobs: int
                        ) -> tuple[np.ndarray, np.ndarray]:
        """Assign with the embedding formed block by block, keeping the row norms."""
        U32, C32 = self.U.astype(np.float32), centers.T.astype(np.float32)

        def block(rows: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            E = np.asarray(self._R32[rows] @ U32)
            norms = np.sqrt(np.einsum("ij,ij->i", E, E, dtype=np.float64)) + 1e-10
            scores = E @ C32
            labels = np.argmax(scores, axis=1)
            return labels, scores[np.arange(len(labels)), labels] / norms, norms

        parts = map_blocks(block, self.n_rows, n_jobs)
        self._norms = np.concatenate([p[2] for p in parts])
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def _times(self, M: np.ndarray, n_jobs: int) -> np.ndarray:
        """``U @ M``, by blocks of U's rows (each row as in one product)."""
        if self.U.shape[0] <= _TIMES_ROWS:
            return self.U @ M
        return np.concatenate(map_blocks(lambda rows: self.U[rows] @ M, self.U.shape[0],
                                         n_jobs, _TIMES_ROWS))

    def center_sums(self, labels: np.ndarray, n_clusters: int) -> np.ndarray:
        # By fixed blocks of clusters, whatever n_jobs: each block is the same product. A
        # block's rows of R summed (k' x n_columns) are sparse where few clusters share a
        # column, and dense products are faster beyond a few percent of entries (a third
        # of them at 400 consensus clusters; measured 19 against 0.76 GMAC/s).
        if n_clusters * self.R.shape[1] <= _DENSE_SUMS_MAX:
            per_cluster = self._summed_rows(labels, n_clusters)

            def summed(part: slice) -> np.ndarray:
                return per_cluster[part]
        else:
            weights = sp.csr_matrix((1.0 / self.norms, (labels, np.arange(self.n_rows))),
                                    shape=(n_clusters, self.n_rows))

            def summed(part: slice) -> sp.csr_matrix:
                return weights[part] @ self.R

        return np.concatenate(map_blocks(lambda part: self._times_u(summed(part)),
                                         n_clusters, self.n_jobs, _CLUSTER_BLOCK))

    def _times_u(self, summed: np.ndarray | sp.csr_matrix) -> np.ndarray:
        """A block of per-cluster sums (dense or CSR) times U: as a dense matrix where at
        least :data:`_DENSE_SUMS_SHARE` of its entries are set, else as a sparse one."""
        n_set = summed.nnz if sp.issparse(summed) else np.count_nonzero(summed)
        if n_set >= _DENSE_SUMS_SHARE * np.prod(summed.shape):
            return (summed.toarray() if sp.issparse(summed) else summed) @ self.U
        return np.asarray(sp.csr_matrix(summed) @ self.U)

    @cached_property
    def _R_by_columns(self) -> sp.csc_matrix:
        """R by columns: each column's entries in row order (CSR to CSC keeps that order)."""
        return self.R.tocsc()

    def _summed_rows(self, labels: np.ndarray, n_clusters: int) -> np.ndarray:
        """``sum_(i in c) R_i / |R_i U|`` of every cluster c, shape (n_clusters, n_columns):
        R's entries added in row order into a dense array (the same sums as the product of
        the cluster indicator with R, at a third of its cost, in one pass), by parts of the
        columns in ``n_jobs`` threads: within a column the entries keep their row order, so
        every sum adds the same terms in the same order whatever the parts."""
        R = self._R_by_columns
        scale = 1.0 / self.norms

        def part(columns: slice) -> np.ndarray:
            start, stop, _ = columns.indices(R.shape[1])
            width = stop - start
            first, last = R.indptr[start], R.indptr[stop]
            rows = R.indices[first:last]
            offsets = np.repeat(np.arange(width), np.diff(R.indptr[start:stop + 1]))
            sums = np.zeros(n_clusters * width)
            for a in range(0, len(rows), _SUMS_ENTRIES):  # bounded temporaries
                b = min(a + _SUMS_ENTRIES, len(rows))
                np.add.at(sums, labels[rows[a:b]] * width + offsets[a:b],
                          R.data[first + a:first + b] * scale[rows[a:b]])
            return sums.reshape(n_clusters, width)

        return by_column_parts(part, R.shape[1], self.n_jobs)

    def assigned_products(self, labels: np.ndarray, centers: np.ndarray) -> np.ndarray:
        G = self.U @ centers.T
        rows = np.repeat(np.arange(self.n_rows), np.diff(self.R.indptr))
        terms = self.R.data * G[self.R.indices, labels[rows]]
        return np.bincount(rows, weights=terms, minlength=self.n_rows) / self.norms


Rows = MatrixRows | TransferRows
