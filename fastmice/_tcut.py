"""Transfer cut (Tcut) partition of a bipartite graph (SPEC section 3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from fastmice._blas import on_one_blas_thread
from fastmice._kmeans import litekmeans

__all__ = ["BipartitePartition", "partition_bipartite_graph"]

_EPS = np.finfo(np.float64).eps


def _row_stochastic(B: sp.csr_matrix) -> sp.csr_matrix:
    """Dx^-1 B: rows divided by their sums (an all-zero row stays zero, as dx = 1e-10 does)."""
    dx = np.asarray(B.sum(axis=1)).ravel()
    dx[dx == 0] = 1e-10
    return sp.csr_matrix(sp.diags(1.0 / dx) @ B)


def _embed_rows(B: sp.csr_matrix, anchor_embedding: np.ndarray) -> np.ndarray:
    """Transfer the anchor-side eigenvectors to the rows and unit-normalise them."""
    embedding = np.asarray(_row_stochastic(B) @ anchor_embedding)
    embedding /= np.sqrt(np.einsum("ij,ij->i", embedding, embedding))[:, None] + 1e-10
    return embedding


def _pad_columns(B: sp.csr_matrix, n_columns: int) -> sp.csr_matrix:
    if B.shape[1] >= n_columns:
        return B
    return sp.csr_matrix((B.data, B.indices, B.indptr), shape=(B.shape[0], n_columns))


def _top_eigenvectors(B: sp.csr_matrix, n_clusters: int) -> np.ndarray:
    """Generalised eigenvectors of (Wy, diag(d)) for the ``n_clusters`` largest eigenvalues."""
    Wy = (B.T @ _row_stochastic(B)).toarray()
    d = Wy.sum(axis=1)
    d[d == 0] = _EPS
    d_inv_sqrt = 1.0 / np.sqrt(d)
    normalized = d_inv_sqrt[:, None] * Wy * d_inv_sqrt[None, :]
    normalized = (normalized + normalized.T) / 2
    n = normalized.shape[0]
    _, vectors = scipy.linalg.eigh(normalized, subset_by_index=[n - n_clusters, n - 1],
                                   overwrite_a=True, check_finite=False, driver="evr")
    return d_inv_sqrt[:, None] * vectors[:, ::-1]


@dataclass
class BipartitePartition:
    """A Tcut partition of the rows of a bipartite graph, able to place new rows.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Labels in ``0..n_clusters-1`` of the rows the partition was computed on.
    anchor_embedding : ndarray of shape (n_columns, n_clusters)
        Column-side (anchor-side) eigenvectors.
    centers : ndarray of shape (n_clusters, n_clusters)
        Unit-norm cosine k-means centres in the row embedding.
    """

    labels_: np.ndarray
    anchor_embedding: np.ndarray
    centers: np.ndarray

    @on_one_blas_thread
    def predict(self, B_new: sp.spmatrix) -> np.ndarray:
        """Label new rows of shape (n_new, n_columns) by their nearest centre (cosine)."""
        B_new = _pad_columns(sp.csr_matrix(B_new, dtype=np.float64),
                             self.anchor_embedding.shape[0])
        if B_new.shape[1] != self.anchor_embedding.shape[0]:
            raise ValueError(f"B_new has {B_new.shape[1]} columns; the partition was computed "
                             f"on a graph with {self.anchor_embedding.shape[0]}.")
        embedding = _embed_rows(B_new, self.anchor_embedding)
        return np.argmax(embedding @ self.centers.T, axis=1)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat dict of arrays (for ``np.savez``)."""
        return {"labels": self.labels_, "anchor_embedding": self.anchor_embedding,
                "centers": self.centers}

    @classmethod
    def from_arrays(cls, arrays) -> BipartitePartition:
        """Inverse of :meth:`to_arrays`."""
        return cls(np.asarray(arrays["labels"]), np.asarray(arrays["anchor_embedding"]),
                   np.asarray(arrays["centers"]))


@on_one_blas_thread
def partition_bipartite_graph(B: sp.spmatrix, n_clusters: int, *, seed: int | None = None,
                              max_iter: int = 5, n_init: int = 1,
                              rng: np.random.Generator | None = None) -> BipartitePartition:
    """Partition the rows of a bipartite graph by transfer cut.

    The ``n_clusters`` leading eigenvectors of the normalised column-side graph
    ``D^-1/2 B^T Dx^-1 B D^-1/2`` (only those are computed), transferred to the rows by
    ``Dx^-1 B``, unit-normalised, then clustered by cosine litekmeans.

    Parameters
    ----------
    B : sparse matrix of shape (n_samples, n_columns)
        Non-negative weights, e.g. a view group's sample-to-anchor graph.
    n_clusters : int
    seed : int, optional
        Seed of the k-means initialisation (or pass ``rng``).
    max_iter : int, default=5
    n_init : int, default=1
    rng : numpy.random.Generator, optional

    Returns
    -------
    partition : BipartitePartition
    """
    if rng is None:
        rng = np.random.default_rng(seed)
    B = _pad_columns(sp.csr_matrix(B, dtype=np.float64), n_clusters)
    anchor_embedding = _top_eigenvectors(B, n_clusters)
    embedding = _embed_rows(B, anchor_embedding)
    labels, centers = litekmeans(embedding, n_clusters, metric="cosine", max_iter=max_iter,
                                 n_init=n_init, rng=rng)
    return BipartitePartition(labels.astype(np.int64), anchor_embedding, centers)
