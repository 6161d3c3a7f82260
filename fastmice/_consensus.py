"""Base clusterings of view groups and the consensus over them (SPEC sections 2.4 and 4)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from fastmice._auto_k import KChoice, choose_n_clusters
from fastmice._best import informed_labels, weighted_incidence
from fastmice._best_consensus import best_consensus
from fastmice._joint import JointEnsemble
from fastmice._params import AUTO
from fastmice._specs import CONSENSUS_STREAM, PARTITION_STREAM, ViewGroupSpec, group_rng
from fastmice._stages import stage
from fastmice._tcut import BipartitePartition, partition_bipartite_graph

__all__ = ["ConsensusPartition", "cluster_group", "consensus_partition"]

# Tcut k-means budgets of the official code: weak base clusterings, a stronger consensus.
BASE_MAX_ITER, BASE_N_INIT = 5, 1
# A deviation of ours, for speed: a base clustering's dense eigenproblem (some hundreds of
# eigenpairs of a side of 1000 anchors or more) is solved in single precision, twice as fast;
# its vectors only seed 5 rounds of k-means. The consensus keeps double precision.
BASE_EIGEN_DTYPE = np.float32
CONSENSUS_MAX_ITER, CONSENSUS_N_INIT = 20, 5

# A deviation of ours, for scale (the official code does every step on every sample; on
# the benchmark data sets, all below 10,000 samples, nothing changes): on more samples than
# ``*_KMEANS_SAMPLE``, a Tcut runs its k-means rounds on a uniform sample of that many, then
# ``*_FULL_ROUNDS`` more rounds on every sample; the consensus also learns its eigenvectors
# on a sample of ``CONSENSUS_SAMPLE`` (its column graph is some 10,000 base clusters wide,
# and solved by subspace iteration over its rows). Samples grow with the number of
# clusters (``*_PER_CLUSTER`` samples a cluster at least). A base clustering learns its
# eigenvectors on every sample (``BASE_SAMPLE = None``): its column graph (a few thousand
# anchors) costs one sparse product over the rows, and learnt on a sample of 50,000 it lost
# 1.5-2 NMI points of the consensus at 100,000 samples (benchmarks/sampling.py,
# docs/scale.md "Quality at scale"). Each sample applies on its own.
BASE_SAMPLE, BASE_KMEANS_SAMPLE, BASE_PER_CLUSTER, BASE_FULL_ROUNDS = None, 50_000, 64, 1
CONSENSUS_SAMPLE, CONSENSUS_KMEANS_SAMPLE = 100_000, 20_000
# 10 full rounds, not 4: on a k-means sample of 20,000 the consensus's centres need more
# rounds over every sample to settle (+0.65 NMI points at 100,000 samples, k = 400).
CONSENSUS_PER_CLUSTER, CONSENSUS_FULL_ROUNDS = 50, 10
#: Rounds over every sample when a consensus is refined from a previous one (recluster).
REFINE_ROUNDS = 4


def _sample_sizes(n_clusters: int, sample: int | None, kmeans_sample: int,
                  per_cluster: int) -> tuple[int | None, int]:
    """The eigen step's sample (None: every sample) and the k-means rounds' sample."""
    least = per_cluster * n_clusters
    return None if sample is None else max(sample, least), max(kmeans_sample, least)


def cluster_group(B: sp.spmatrix, spec: ViewGroupSpec,
                  init: BipartitePartition | None = None, *,
                  mode: str = "paper", n_jobs: int = 1) -> BipartitePartition:
    """The base clustering of one view group: Tcut of its graph into ``spec.n_base_clusters``.

    Parameters
    ----------
    B : sparse matrix of shape (n_samples, n_anchor_columns)
        The group's graph from :func:`fastmice.build_group_graph`.
    spec : ViewGroupSpec
    init : BipartitePartition, optional
        The group's base clustering of the graph's first rows (before new rows were added):
        those samples keep their base labels and the new ones go to its nearest centre
        (:meth:`BipartitePartition.extended`); nothing is recomputed.
    mode : {"paper", "best"}, default="paper"
        In the best mode a sample that the graph does not inform (a row of machine-epsilon
        weights) gets base label -1 (:func:`fastmice._best.informed_labels`).
    n_jobs : int, default=1
        Threads over row blocks (in a team, ``fastmice._parallel``: the team's threads
        that have no group of their own); the result does not depend on it.

    Returns
    -------
    partition : BipartitePartition
    """
    if init is not None:
        if init.anchor_embedding.shape[1] != spec.n_base_clusters:
            raise ValueError(f"init has {init.anchor_embedding.shape[1]} clusters; group "
                             f"{spec.group_index} has {spec.n_base_clusters}.")
        with stage("kmeans"):
            partition = init.extended(B)
    else:
        k = spec.n_base_clusters
        sample, kmeans_sample = _sample_sizes(k, BASE_SAMPLE, BASE_KMEANS_SAMPLE,
                                              BASE_PER_CLUSTER)
        partition = partition_bipartite_graph(
            B, k, max_iter=BASE_MAX_ITER, n_init=BASE_N_INIT,
            rng=group_rng(spec.seed, PARTITION_STREAM), sample_size=sample,
            kmeans_sample_size=kmeans_sample, full_rounds=BASE_FULL_ROUNDS, init=init,
            eigen_dtype=BASE_EIGEN_DTYPE, n_jobs=n_jobs)
    if mode == "best":
        partition.labels_ = informed_labels(B, partition.labels_)
    return partition


def _threads(n_jobs: int | None) -> int:
    from joblib import effective_n_jobs

    return os.cpu_count() or 1 if n_jobs is None else effective_n_jobs(n_jobs)


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
    member_weights : ndarray of shape (n_members,), optional
        The best mode's weight of each base clustering (base label -1: no edge); None in
        the paper mode (every weight 1, every label a cluster).
    k_choice : KChoice or None
        How k was chosen, when it was (``n_clusters="auto"``).
    joint : JointEnsemble or None
        The best mode's joint-space k-means (:mod:`fastmice._joint`): its members are the
        graph's last base clusterings, computed from the views.
    source : {"consensus", "joint", "spectral"}
        Which gave ``labels_``: the graph's cut, the joint candidate or the spectral one
        (:mod:`fastmice._joint_spectral`; either agreed better with the weighted base
        clusterings, and ``joint`` holds it).
    """

    labels_: np.ndarray
    offsets: np.ndarray
    n_base_clusters: np.ndarray
    used_columns: np.ndarray
    partition: BipartitePartition
    member_weights: np.ndarray | None = None
    k_choice: KChoice | None = None
    joint: JointEnsemble | None = None
    source: str = "consensus"

    @property
    def n_clusters(self) -> int:
        """The number of clusters of the partition."""
        return int(self.partition.centers.shape[0])

    def graph(self, base_labels: np.ndarray) -> sp.csr_matrix:
        """The consensus graph's rows (kept columns) of samples with these base labels."""
        n_columns = int(self.offsets[-1] + self.n_base_clusters[-1])
        if self.member_weights is None:
            B = _incidence(base_labels, self.offsets, n_columns)
        else:
            B = weighted_incidence(base_labels, self.offsets, n_columns, self.member_weights)
        return B[:, self.used_columns]

    def predict(self, base_labels: np.ndarray, Xs=None, n_jobs: int | None = 1) -> np.ndarray:
        """Consensus labels of samples given their base labels, shape (n_new, n_groups),
        and, where the partition has a ``joint`` part, their views ``Xs``."""
        base_labels = np.asarray(base_labels, dtype=np.int64)
        n_groups = len(self.offsets) - (0 if self.joint is None else self.joint.n_members)
        if base_labels.ndim != 2 or base_labels.shape[1] != n_groups:
            raise ValueError(f"base_labels must have shape (n_samples, {n_groups}); "
                             f"got {base_labels.shape}.")
        if self.joint is not None:
            if Xs is None:
                raise ValueError("This consensus has a joint-space part: predict needs the "
                                 "new samples' views (Xs).")
            candidate, members = self.joint.predict(Xs, n_jobs)
            if self.source in ("joint", "spectral"):
                return candidate
            base_labels = np.hstack([base_labels, members])
        lowest = 0 if self.member_weights is None else -1
        if ((base_labels < lowest) | (base_labels >= self.n_base_clusters[None, :])).any():
            raise ValueError("base_labels hold a label outside 0..n_base_clusters-1.")
        return self.partition.predict(self.graph(base_labels))

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat dict of arrays (for ``np.savez``)."""
        arrays = {f"partition_{k}": v for k, v in self.partition.to_arrays().items()}
        arrays.update(labels=self.labels_, offsets=self.offsets,
                      n_base_clusters=self.n_base_clusters, used_columns=self.used_columns)
        if self.k_choice is not None:
            arrays.update(k_chosen=np.asarray(self.k_choice.n_clusters),
                          k_candidates=self.k_choice.candidates, k_gaps=self.k_choice.gaps)
            if self.k_choice.rule is not None:
                arrays["k_rule"] = np.asarray(self.k_choice.rule)
        if self.member_weights is not None:
            arrays["member_weights"] = self.member_weights
        if self.joint is not None:
            arrays.update({f"joint_{k}": v for k, v in self.joint.to_arrays().items()})
            arrays["source"] = np.asarray(self.source)
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> ConsensusPartition:
        """Inverse of :meth:`to_arrays`."""
        partition = BipartitePartition.from_arrays(
            {k: arrays[f"partition_{k}"] for k in ("labels", "anchor_embedding", "centers")})
        choice = None
        if "k_chosen" in arrays:
            choice = KChoice(int(arrays["k_chosen"]), np.asarray(arrays["k_candidates"]),
                             np.asarray(arrays["k_gaps"]),
                             str(arrays["k_rule"]) if "k_rule" in arrays else None)
        weights = arrays.get("member_weights")
        joint = None
        if "joint_labels" in arrays:
            joint = JointEnsemble.from_arrays({k[len("joint_"):]: arrays[k] for k in arrays
                                               if k.startswith("joint_")})
        return cls(np.asarray(arrays["labels"]), np.asarray(arrays["offsets"]),
                   np.asarray(arrays["n_base_clusters"]), np.asarray(arrays["used_columns"]),
                   partition, None if weights is None else np.asarray(weights), choice,
                   joint, str(arrays["source"]) if "source" in arrays else "consensus")


def consensus_partition(base_labels: np.ndarray, n_clusters: int | str, *, seed: int,
                        max_iter: int = CONSENSUS_MAX_ITER,
                        n_init: int = CONSENSUS_N_INIT, n_jobs: int | None = None,
                        init: ConsensusPartition | None = None,
                        mode: str = "paper") -> ConsensusPartition:
    """Combine base clusterings into one partition by Tcut on the sample-to-cluster graph.

    Parameters
    ----------
    base_labels : ndarray of shape (n_samples, n_members)
        Base clustering ``j`` in column ``j``, labels ``0..k_j-1``.
    n_clusters : int or "auto"
        With ``"auto"``, k is chosen by the eigengap of the consensus graph
        (:func:`fastmice._auto_k.choose_n_clusters`; kept as ``k_choice``), or, with
        ``init``, is ``init``'s.
    seed : int
        Root seed of the ensemble (the consensus uses its own stream of it).
    max_iter : int, default=20
    n_init : int, default=5
    n_jobs : int, optional
        Threads (default: as many as cores); the result does not depend on it.
    init : ConsensusPartition, optional
        The consensus of the same base clusterings over fewer samples (before new samples
        were added): its eigenvectors are kept and its centres refined over every sample,
        instead of a new Tcut.
    mode : {"paper", "best"}, default="paper"
        The best mode weights the base clusterings, skips base labels -1 and keeps the best
        of several replicates (:func:`fastmice._best_consensus.best_consensus`).

    Returns
    -------
    consensus : ConsensusPartition
    """
    with stage("consensus"):
        base_labels = np.asarray(base_labels, dtype=np.int64)
        if base_labels.ndim != 2 or base_labels.shape[1] == 0:
            raise ValueError(f"base_labels must be 2-D (n_samples, n_members) with at least "
                             f"one member; got shape {base_labels.shape}.")
        if base_labels.min(initial=0) < (0 if mode == "paper" else -1):
            raise ValueError("base_labels must be non-negative integers (-1 in the best mode).")
        if init is not None:
            k = init.n_clusters if n_clusters == AUTO else n_clusters
            refined = _refined_consensus(base_labels, k, init, _threads(n_jobs))
            return replace(refined, k_choice=init.k_choice if n_clusters == AUTO else None)
        choice = None
        if n_clusters == AUTO:
            choice = choose_n_clusters(base_labels, seed=seed)
            n_clusters = choice.n_clusters
        if mode == "best":
            sample, kmeans_sample = _sample_sizes(n_clusters, CONSENSUS_SAMPLE,
                                                  CONSENSUS_KMEANS_SAMPLE,
                                                  CONSENSUS_PER_CLUSTER)
            partition, offsets, n_base_clusters, used_columns, weights = best_consensus(
                base_labels, n_clusters, seed, max_iter, n_init, _threads(n_jobs),
                sample=sample, kmeans_sample=kmeans_sample, full_rounds=CONSENSUS_FULL_ROUNDS)
            found = ConsensusPartition(partition.labels_, offsets, n_base_clusters,
                                       used_columns, partition, weights)
        else:
            found = _consensus_partition(base_labels, n_clusters, seed, max_iter, n_init,
                                         n_jobs)
        return replace(found, k_choice=choice)


def _refined_consensus(base_labels: np.ndarray, n_clusters: int, init: ConsensusPartition,
                       n_jobs: int) -> ConsensusPartition:
    if base_labels.shape[1] != len(init.offsets) or \
            (base_labels >= init.n_base_clusters[None, :]).any():
        raise ValueError("init is the consensus of other base clusterings (different members "
                         "or cluster counts).")
    partition = partition_bipartite_graph(init.graph(base_labels), n_clusters,
                                          init=init.partition,
                                          full_rounds=REFINE_ROUNDS, n_jobs=n_jobs)
    return ConsensusPartition(partition.labels_, init.offsets, init.n_base_clusters,
                              init.used_columns, partition, init.member_weights)


def _consensus_partition(base_labels: np.ndarray, n_clusters: int, seed: int, max_iter: int,
                         n_init: int, n_jobs: int | None) -> ConsensusPartition:
    n_base_clusters = base_labels.max(axis=0) + 1
    offsets = np.concatenate([[0], np.cumsum(n_base_clusters)[:-1]])
    B = _incidence(base_labels, offsets, int(n_base_clusters.sum()))
    used_columns = np.flatnonzero(np.asarray(B.sum(axis=0)).ravel() > 0)
    sample, kmeans_sample = _sample_sizes(n_clusters, CONSENSUS_SAMPLE,
                                          CONSENSUS_KMEANS_SAMPLE, CONSENSUS_PER_CLUSTER)
    partition = partition_bipartite_graph(
        B[:, used_columns], n_clusters, max_iter=max_iter, n_init=n_init,
        rng=group_rng(seed, CONSENSUS_STREAM), n_jobs=_threads(n_jobs), sample_size=sample,
        kmeans_sample_size=kmeans_sample, full_rounds=CONSENSUS_FULL_ROUNDS)
    return ConsensusPartition(partition.labels_, offsets, n_base_clusters, used_columns,
                              partition)
