"""Transfer cut (Tcut) partition of a bipartite graph (SPEC section 3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fastmice._blas import on_one_blas_thread
from fastmice._eigen import column_graph_eigenvectors
from fastmice._kmeans import lloyd_rounds, sampled_litekmeans
from fastmice._parallel import map_blocks
from fastmice._rows import MatrixRows, TransferRows
from fastmice._stages import stage

__all__ = ["BipartitePartition", "partition_bipartite_graph"]

#: Largest rows x dimensions of an embedding formed whole (2^24 float64 = 134 MB); beyond
#: it, k-means works on the implicit TransferRows.
_DENSE_EMBEDDING = 2**24
#: Rows a piece of Dx^-1 B covers.
_STOCHASTIC_ROWS = 32768


def _row_stochastic(B: sp.csr_matrix, n_jobs: int = 1) -> sp.csr_matrix:
    """Dx^-1 B: rows divided by their sums (an all-zero row stays zero, as dx = 1e-10 does).

    By blocks of rows in ``n_jobs`` threads (each row as in one product)."""
    def block(rows: slice) -> sp.csr_matrix:
        part = B[rows]
        dx = np.asarray(part.sum(axis=1)).ravel()
        dx[dx == 0] = 1e-10
        return sp.csr_matrix(sp.diags(1.0 / dx) @ part)

    if B.shape[0] <= _STOCHASTIC_ROWS:
        return block(slice(None))
    return sp.vstack(map_blocks(block, B.shape[0], n_jobs, _STOCHASTIC_ROWS), format="csr")


def _embed_rows(B: sp.csr_matrix, anchor_embedding: np.ndarray,
                n_jobs: int = 1) -> MatrixRows | TransferRows:
    """The rows' embedding: anchor-side eigenvectors transferred by ``Dx^-1 B``, unit rows.

    Formed whole when small (as the official code does); otherwise kept implicit.
    """
    R = _row_stochastic(B, n_jobs)
    if B.shape[0] * anchor_embedding.shape[1] > _DENSE_EMBEDDING:
        return TransferRows(R, anchor_embedding, n_jobs=n_jobs)
    embedding = np.asarray(R @ anchor_embedding)
    embedding /= np.sqrt(np.einsum("ij,ij->i", embedding, embedding))[:, None] + 1e-10
    return MatrixRows(embedding, cosine=True, n_jobs=n_jobs)


def _pad_columns(B: sp.csr_matrix, n_columns: int) -> sp.csr_matrix:
    if B.shape[1] >= n_columns:
        return B
    return sp.csr_matrix((B.data, B.indices, B.indptr), shape=(B.shape[0], n_columns))


@dataclass
class BipartitePartition:
    """A Tcut partition of the rows of a bipartite graph, able to place new rows.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Labels in ``0..n_clusters-1`` of the rows the partition was computed on.
    anchor_embedding : ndarray of shape (n_columns, n_vectors)
        Column-side (anchor-side) eigenvectors (``n_vectors``: ``n_clusters`` unless
        :func:`partition_bipartite_graph` was asked for more).
    centers : ndarray of shape (n_clusters, n_vectors)
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
        labels, _ = _embed_rows(B_new, self.anchor_embedding).assign(self.centers)
        return labels

    def extended(self, B: sp.spmatrix) -> BipartitePartition:
        """This partition over a graph with rows added after the ones it was computed on.

        Parameters
        ----------
        B : sparse matrix of shape (n_samples, n_columns)
            The graph's rows: first the ``len(labels_)`` rows the partition was computed
            on, which keep their labels, then new rows, placed by :meth:`predict`.

        Returns
        -------
        partition : BipartitePartition
            Labels of shape (n_samples,); the same eigenvectors and centres.
        """
        n_old = len(self.labels_)
        if B.shape[0] < n_old:
            raise ValueError(f"B has {B.shape[0]} rows; the partition was computed on "
                             f"{n_old}, which must come first.")
        new_rows = sp.csr_matrix(B)[n_old:]
        placed = self.predict(new_rows) if new_rows.shape[0] else np.empty(0, np.int64)
        labels = np.concatenate([self.labels_, placed]).astype(np.int64)
        return BipartitePartition(labels, self.anchor_embedding, self.centers)

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
                              rng: np.random.Generator | None = None,
                              sample_size: int | None = None,
                              kmeans_sample_size: int | None = None, full_rounds: int = 1,
                              init: BipartitePartition | None = None,
                              n_jobs: int = 1,
                              eigen_dtype: type = np.float64,
                              n_vectors: int | None = None,
                              kmeans_init: str = "random",
                              eigen_cache: dict | None = None,
                              solve_vectors: int | None = None) -> BipartitePartition:
    """Partition the rows of a bipartite graph by transfer cut.

    The ``n_clusters`` (or ``n_vectors``) leading eigenvectors of the normalised column-side
    graph ``D^-1/2 B^T Dx^-1 B D^-1/2`` (only those are computed), transferred to the rows by
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
    sample_size : int, optional
        With more rows than this, the partition is learnt on a uniform sample of this many
        rows (the eigenvectors of its column graph, the k-means rounds), then every row is
        transferred and the k-means rounds go on over every row for at most
        ``full_rounds`` more (:func:`fastmice._kmeans.sampled_litekmeans`). Default: every
        step on every row.
    kmeans_sample_size : int, optional
        The k-means rounds' own (smaller) sample, drawn from the eigen step's sample if there
        is one, whenever the rows are more (default: ``sample_size``).
    full_rounds : int, default=1
        See ``sample_size`` and ``init``.
    init : BipartitePartition, optional
        A partition of an earlier graph with the same columns (e.g. before new rows were
        added): its eigenvectors are kept and the k-means rounds start from its centres,
        for at most ``full_rounds``. Nothing is drawn from ``rng``.
    n_jobs : int, default=1
        Threads over row blocks and k-means replicates (the result does not depend on it).
    eigen_dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Precision of a dense eigensolver, if the eigen step uses one
        (:func:`fastmice._eigen.column_graph_eigenvectors`).
    n_vectors : int, optional
        Eigenvectors of the embedding the k-means clusters (default ``n_clusters``, as
        Tcut; the best mode's consensus asks for more, :mod:`fastmice._best`). With
        ``init``, the number of ``init``'s.
    kmeans_init : {"random", "k-means++"}, default="random"
        How the k-means replicates start (:func:`fastmice._kmeans.litekmeans`; random rows
        as Tcut).
    eigen_cache : dict, optional
        Shared by several partitions of the same ``B`` (the best mode's consensus cuts):
        an eigen step on every row that drew nothing from ``rng`` is kept there by its
        width and reused, so that the labels are those of solving it again.
    solve_vectors : int, optional
        With ``eigen_cache``: the eigenvectors the eigen step solves for (at least
        ``n_vectors``; the embedding keeps the leading ``n_vectors``), so that cuts of
        several widths share one eigenproblem, solved at the widest.

    Returns
    -------
    partition : BipartitePartition
    """
    if rng is None:
        rng = np.random.default_rng(seed)
    if init is not None:
        n_vectors = init.anchor_embedding.shape[1]
    n_vectors = n_clusters if n_vectors is None else max(n_clusters, int(n_vectors))
    B = _pad_columns(sp.csr_matrix(B, dtype=np.float64), n_vectors)
    if init is not None:
        if init.anchor_embedding.shape[0] != B.shape[1] or \
                init.centers.shape[0] != n_clusters:
            raise ValueError(f"init was computed on a graph with "
                             f"{init.anchor_embedding.shape[0]} columns into "
                             f"{init.centers.shape[0]} clusters; this one has "
                             f"{B.shape[1]} columns and n_clusters={n_clusters}.")
        with stage("kmeans"):
            embedding = _embed_rows(B, init.anchor_embedding, n_jobs)
            labels, centers = lloyd_rounds(embedding, init.centers, full_rounds)
        return BipartitePartition(labels.astype(np.int64), init.anchor_embedding, centers)
    sample = kmeans_sample = None
    n_rows = B.shape[0]
    if sample_size is not None and n_rows > sample_size:
        sample = np.sort(rng.choice(n_rows, sample_size, replace=False))
    kmeans_sample_size = sample_size if kmeans_sample_size is None else kmeans_sample_size
    if kmeans_sample_size is not None and n_rows > kmeans_sample_size:
        among = sample if sample is not None and kmeans_sample_size < len(sample) else n_rows
        kmeans_sample = np.sort(rng.choice(among, kmeans_sample_size, replace=False))
    cached = eigen_cache is not None and sample is None
    solved = max(n_vectors, min(solve_vectors or 0, B.shape[1])) if cached else n_vectors
    key = (solved, np.dtype(eigen_dtype).str)
    if cached and key in eigen_cache:
        anchor_embedding = eigen_cache[key]
    else:
        drawn = rng.bit_generator.state
        with stage("eigen"):
            anchor_embedding = column_graph_eigenvectors(B if sample is None else B[sample],
                                                         solved, rng=rng, n_jobs=n_jobs,
                                                         dense_dtype=eigen_dtype)
        if cached and rng.bit_generator.state == drawn:
            eigen_cache[key] = anchor_embedding
    anchor_embedding = np.ascontiguousarray(anchor_embedding[:, :n_vectors])
    with stage("kmeans"):
        embedding = _embed_rows(B, anchor_embedding, n_jobs)
        labels, centers = sampled_litekmeans(
            embedding, n_clusters, sample=kmeans_sample, full_rounds=full_rounds,
            metric="cosine", max_iter=max_iter, n_init=n_init, rng=rng, n_jobs=n_jobs,
            init=kmeans_init)
    return BipartitePartition(labels.astype(np.int64), anchor_embedding, centers)
