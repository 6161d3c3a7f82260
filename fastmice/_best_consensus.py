"""The best mode's consensus: weighted base clusterings, a wider embedding, replicates chosen
by agreement."""

from __future__ import annotations

import numpy as np

from fastmice import _best
from fastmice._parallel import map_threads
from fastmice._specs import CONSENSUS_STREAM, group_rng
from fastmice._tcut import partition_bipartite_graph

__all__ = ["best_consensus"]

#: Rows x clusters below which the consensus cuts run side by side, each on one thread.
CUTS_THREADED_WORK = 1_000_000


def best_consensus(base_labels: np.ndarray, n_clusters: int, seed: int, max_iter: int,
                   n_init: int, n_jobs: int, *, sample: int | None, kmeans_sample: int,
                   full_rounds: int) -> tuple:
    """The consensus cut of the best mode (:mod:`fastmice._best`).

    Parameters
    ----------
    base_labels : ndarray of shape (n_samples, n_members)
        Labels ``0..k_j-1``, or -1 where a base clustering knows nothing of a sample.
    n_clusters, seed, max_iter, n_init, n_jobs
        As :func:`fastmice.consensus_partition`.
    sample, kmeans_sample, full_rounds
        The consensus's sample sizes and rounds on every sample (``fastmice._consensus``).

    Returns
    -------
    partition : BipartitePartition
        The cut kept.
    offsets, n_base_clusters, used_columns : ndarray
        The consensus graph's columns (as :class:`fastmice.ConsensusPartition` keeps them).
    weights : ndarray of shape (n_members,)
    """
    choices = _best.CHOICES
    n_base_clusters = np.maximum(base_labels.max(axis=0) + 1, 1)
    offsets = np.concatenate([[0], np.cumsum(n_base_clusters)[:-1]])
    weights = _best.agreement_weights(base_labels, choices.weighting, choices.entropy_knee,
                                      _best.agreement_knee(base_labels.shape[0]),
                                      choices.centrality, n_jobs)
    B = _best.weighted_incidence(base_labels, offsets, int(n_base_clusters.sum()), weights)
    used_columns = np.flatnonzero(np.asarray(B.sum(axis=0)).ravel() > 0)
    B = B[:, used_columns]
    widths, kmeans_init = _best.consensus_cuts(n_clusters, base_labels.shape[0])
    if kmeans_init == "k-means++":
        # One start per cut: k-means++ costs k times a random start, and its starts spread.
        n_init = 1
    eigen_cache: dict = {}  # every cut's embedding: the leading vectors of one eigenproblem
    small = base_labels.shape[0] * n_clusters < CUTS_THREADED_WORK
    inner_jobs = 1 if small else n_jobs

    def cut(index: int, threads: int = inner_jobs) -> tuple:  # each cut on its own stream
        stream = (CONSENSUS_STREAM,) if index == 0 else (CONSENSUS_STREAM, index)
        partition = partition_bipartite_graph(
            B, n_clusters, max_iter=max_iter, n_init=n_init, rng=group_rng(seed, *stream),
            n_jobs=threads, sample_size=sample, kmeans_sample_size=kmeans_sample,
            full_rounds=full_rounds, n_vectors=widths[index], kmeans_init=kmeans_init,
            eigen_cache=eigen_cache, solve_vectors=max(widths))
        score = _best.weighted_agreement(partition.labels_, base_labels, weights, threads) \
            if len(widths) > 1 else 0.0
        return partition, score

    # The first cut alone, on every thread, fills the eigen cache; the others then run side
    # by side where the rows are few (a cut's row blocks are too short for threads to pay),
    # else one by one with every thread on each.
    cuts = [cut(0, n_jobs), *map_threads(cut, range(1, len(widths)), n_jobs if small else 1)]
    best, best_score, wide_score = None, -np.inf, -np.inf
    for width, (partition, score) in zip(widths, cuts, strict=True):
        if width >= widths[0]:
            wide_score = max(wide_score, score)
        elif score <= wide_score + choices.narrow_cuts:  # a narrow cut (after the wider ones)
            continue
        if score > best_score:
            best, best_score = partition, score
    return best, offsets, n_base_clusters, used_columns, weights
