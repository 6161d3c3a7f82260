"""Base clusterings of view groups and the consensus over them (SPEC sections 2.4 and 4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fastmice._specs import CONSENSUS_STREAM, PARTITION_STREAM, ViewGroupSpec, group_rng
from fastmice._tcut import BipartitePartition, partition_bipartite_graph

__all__ = ["ConsensusPartition", "cluster_group", "consensus_partition"]

# Tcut k-means budgets of the official code: weak base clusterings, a stronger consensus.
BASE_MAX_ITER, BASE_N_INIT = 5, 1
CONSENSUS_MAX_ITER, CONSENSUS_N_INIT = 20, 5


def cluster_group(B: sp.spmatrix, spec: ViewGroupSpec) -> BipartitePartition:
    """The base clustering of one view group: Tcut of its graph into ``spec.n_base_clusters``.

    Parameters
    ----------
    B : sparse matrix of shape (n_samples, n_anchor_columns)
        The group's graph from :func:`fastmice.build_group_graph`.
    spec : ViewGroupSpec

    Returns
    -------
    partition : BipartitePartition
    """
    return partition_bipartite_graph(B, spec.n_base_clusters, max_iter=BASE_MAX_ITER,
                                     n_init=BASE_N_INIT,
                                     rng=group_rng(spec.seed, PARTITION_STREAM))


def _incidence(base_labels: np.ndarray, offsets: np.ndarray, n_columns: int) -> sp.csr_matrix:
    """Binary sample-to-cluster matrix: one 1 per base clustering in every row."""
    n_samples, n_members = base_labels.shape
    columns = (base_labels + offsets[None, :]).ravel()
    indptr = np.arange(0, n_samples * n_members + 1, n_members)
    return sp.csr_matrix((np.ones(columns.size), columns, indptr), shape=(n_samples, n_columns))


@dataclass
class ConsensusPartition:
    """The consensus partition, able to label new samples from their base labels.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    offsets : ndarray of shape (n_members,)
        First column of each base clustering in the sample-to-cluster graph.
    n_base_clusters : ndarray of shape (n_members,)
    used_columns : ndarray of int
        Graph columns kept (clusters with at least one sample).
    partition : BipartitePartition
    """

    labels_: np.ndarray
    offsets: np.ndarray
    n_base_clusters: np.ndarray
    used_columns: np.ndarray
    partition: BipartitePartition

    def predict(self, base_labels: np.ndarray) -> np.ndarray:
        """Consensus labels of samples given their base labels, shape (n_new, n_members)."""
        base_labels = np.asarray(base_labels, dtype=np.int64)
        if base_labels.ndim != 2 or base_labels.shape[1] != len(self.offsets):
            raise ValueError(f"base_labels must have shape (n_samples, {len(self.offsets)}); "
                             f"got {base_labels.shape}.")
        if ((base_labels < 0) | (base_labels >= self.n_base_clusters[None, :])).any():
            raise ValueError("base_labels hold a label outside 0..n_base_clusters-1.")
        n_columns = int(self.offsets[-1] + self.n_base_clusters[-1])
        B = _incidence(base_labels, self.offsets, n_columns)[:, self.used_columns]
        return self.partition.predict(B)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat dict of arrays (for ``np.savez``)."""
        arrays = {f"partition_{k}": v for k, v in self.partition.to_arrays().items()}
        arrays.update(labels=self.labels_, offsets=self.offsets,
                      n_base_clusters=self.n_base_clusters, used_columns=self.used_columns)
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> ConsensusPartition:
        """Inverse of :meth:`to_arrays`."""
        partition = BipartitePartition.from_arrays(
            {k: arrays[f"partition_{k}"] for k in ("labels", "anchor_embedding", "centers")})
        return cls(np.asarray(arrays["labels"]), np.asarray(arrays["offsets"]),
                   np.asarray(arrays["n_base_clusters"]), np.asarray(arrays["used_columns"]),
                   partition)


def consensus_partition(base_labels: np.ndarray, n_clusters: int, *, seed: int,
                        max_iter: int = CONSENSUS_MAX_ITER,
                        n_init: int = CONSENSUS_N_INIT) -> ConsensusPartition:
    """Combine base clusterings into one partition by Tcut on the sample-to-cluster graph.

    Parameters
    ----------
    base_labels : ndarray of shape (n_samples, n_members)
        Base clustering ``j`` in column ``j``, labels ``0..k_j-1``.
    n_clusters : int
    seed : int
        Root seed of the ensemble (the consensus uses its own stream of it).
    max_iter : int, default=20
    n_init : int, default=5

    Returns
    -------
    consensus : ConsensusPartition
    """
    base_labels = np.asarray(base_labels, dtype=np.int64)
    if base_labels.ndim != 2 or base_labels.shape[1] == 0:
        raise ValueError(f"base_labels must be 2-D (n_samples, n_members) with at least one "
                         f"member; got shape {base_labels.shape}.")
    if base_labels.min(initial=0) < 0:
        raise ValueError("base_labels must be non-negative integers.")
    n_base_clusters = base_labels.max(axis=0) + 1
    offsets = np.concatenate([[0], np.cumsum(n_base_clusters)[:-1]])
    B = _incidence(base_labels, offsets, int(n_base_clusters.sum()))
    used_columns = np.flatnonzero(np.asarray(B.sum(axis=0)).ravel() > 0)
    partition = partition_bipartite_graph(B[:, used_columns], n_clusters, max_iter=max_iter,
                                          n_init=n_init, rng=group_rng(seed, CONSENSUS_STREAM))
    return ConsensusPartition(partition.labels_, offsets, n_base_clusters, used_columns,
                              partition)
