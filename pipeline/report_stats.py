"""The numbers a run report draws, from labels and the stored consensus; linear in N.

:func:`nmi_matrix` (agreement between clusterings), :func:`matched_columns` (clusters
ordered to face the classes they match), :func:`consensus_map` (a 2-D map of some samples
from the consensus embedding) and :func:`compare_labels` (what changed against an earlier
run). Prefect-free and matplotlib-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from fastmice import ConsensusPartition

__all__ = ["LabelChange", "compare_labels", "consensus_map", "contingency", "matched_columns",
           "nmi_matrix"]


def _codes(labels: np.ndarray) -> tuple[np.ndarray, int]:
    values, codes = np.unique(np.asarray(labels), return_inverse=True)
    return codes.reshape(-1).astype(np.int64), len(values)


def contingency(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Counts of samples per (row label, column label), shape (n_row_labels, n_column_labels).

    Labels are encoded in sorted order (``np.unique``).
    """
    r, n_r = _codes(rows)
    c, n_c = _codes(columns)
    return np.bincount(r * n_c + c, minlength=n_r * n_c).reshape(n_r, n_c)


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def _nmi(counts: np.ndarray, n_columns: int, row_sums: np.ndarray, column_sums: np.ndarray,
         h_rows: float, h_columns: float) -> float:
    """Mutual information normalised by the larger entropy (as the paper's NMI).

    ``counts`` is the contingency table flattened row by row (``n_columns`` a row), of which
    only the non-empty cells are read: with hundreds of clusters a side, most are empty.
    """
    n = row_sums.sum()
    cells = np.flatnonzero(counts)
    joint = counts[cells]
    outer = row_sums[cells // n_columns] * column_sums[cells % n_columns]
    p = joint / n
    mutual = float((p * (np.log(joint * n) - np.log(outer))).sum())
    denominator = max(h_rows, h_columns)
    return 1.0 if denominator == 0 else max(0.0, min(1.0, mutual / denominator))


def nmi_matrix(labelings: np.ndarray) -> np.ndarray:
    """NMI (max-normalised) between every pair of columns of ``labelings``.

    Parameters
    ----------
    labelings : ndarray of shape (n_samples, n_labelings)
        One clustering per column, non-negative integer labels.

    Returns
    -------
    nmi : ndarray of shape (n_labelings, n_labelings)
        Symmetric, ones on the diagonal.
    """
    columns = [_codes(labelings[:, j]) for j in range(labelings.shape[1])]
    sizes = [np.bincount(c, minlength=n) for c, n in columns]
    entropies = [_entropy(s) for s in sizes]
    size = len(columns)
    nmi = np.eye(size)
    for a in range(size):
        for b in range(a + 1, size):
            (ca, na), (cb, nb) = columns[a], columns[b]
            counts = np.bincount(ca * nb + cb, minlength=na * nb)
            nmi[a, b] = nmi[b, a] = _nmi(counts, nb, sizes[a], sizes[b],
                                         entropies[a], entropies[b])
    return nmi


def matched_columns(table: np.ndarray) -> np.ndarray:
    """The match of each column (cluster) to a row (class), -1 for a column left unmatched.

    Parameters
    ----------
    table : ndarray of shape (n_rows, n_columns)
        :func:`contingency` of classes against clusters.

    Returns
    -------
    match : ndarray of shape (n_columns,)
        The row each column is matched to by the assignment that keeps most samples
        (Hungarian), or -1.
    """
    rows, columns = linear_sum_assignment(table, maximize=True)
    match = np.full(table.shape[1], -1, dtype=np.int64)
    match[columns] = rows
    return match


def _incidence(base_labels: np.ndarray, offsets: np.ndarray, n_columns: int) -> sp.csr_matrix:
    """One 1 per base clustering in each row (the consensus graph's rows)."""
    n_samples, n_members = base_labels.shape
    columns = (base_labels.astype(np.int64) + offsets[None, :]).ravel()
    indptr = np.arange(0, n_samples * n_members + 1, n_members)
    return sp.csr_matrix((np.ones(columns.size), columns, indptr), shape=(n_samples, n_columns))


def consensus_map(consensus: ConsensusPartition, base_labels: np.ndarray) -> np.ndarray:
    """2-D coordinates of samples: the first two principal axes of their consensus embedding.

    The embedding is the consensus Tcut's: each sample's row of the sample-to-cluster graph,
    divided by its sum, times the cluster-side eigenvectors, scaled to unit length. Its
    cost is linear in the number of samples given.

    Parameters
    ----------
    consensus : ConsensusPartition
        The run's stored consensus.
    base_labels : ndarray of shape (n_samples, n_members)
        The samples' base labels (of the view groups; the joint part's members are added
        from ``consensus``).

    Returns
    -------
    xy : ndarray of shape (n_samples, 2)
    """
    if consensus.joint is not None and base_labels.shape[1] < len(consensus.offsets):
        # The joint part's members are the graph's last base clusterings.
        base_labels = np.hstack([base_labels, consensus.joint.member_labels_])
    n_columns = int(consensus.offsets[-1] + consensus.n_base_clusters[-1])
    graph = _incidence(base_labels, consensus.offsets, n_columns)[:, consensus.used_columns]
    degree = np.asarray(graph.sum(axis=1)).ravel()
    degree[degree == 0] = 1.0
    embedding = np.asarray(sp.diags(1.0 / degree) @ graph @ consensus.partition.anchor_embedding)
    embedding /= np.linalg.norm(embedding, axis=1, keepdims=True) + 1e-10
    embedding -= embedding.mean(axis=0)
    _, _, axes = np.linalg.svd(embedding, full_matrices=False)
    xy = embedding @ axes[:2].T
    if xy.shape[1] < 2:
        xy = np.column_stack([xy, np.zeros(len(xy))])
    # The sign of a principal axis is arbitrary: fix it so that the map does not flip.
    flip = np.sign(np.sum(xy ** 3, axis=0))
    return xy * np.where(flip == 0, 1.0, flip)


@dataclass(frozen=True)
class LabelChange:
    """What changed between an earlier run's labels and a later one's.

    Attributes
    ----------
    sizes_before : ndarray of shape (k_before,)
        Cluster sizes of the earlier run.
    sizes_after : ndarray of shape (k_before + n_unmatched,)
        Sizes of the later run's clusters, each at the position of the earlier cluster it is
        matched to (most samples in common); unmatched clusters last.
    n_common : int
        Samples in both runs.
    n_moved : int
        Of those, how many are in a cluster not matched to their earlier one.
    n_new : int
        Samples only in the later run.
    """

    sizes_before: np.ndarray
    sizes_after: np.ndarray
    n_common: int
    n_moved: int
    n_new: int


def compare_labels(ids: np.ndarray, labels: np.ndarray, before_ids: np.ndarray,
                   before_labels: np.ndarray) -> LabelChange:
    """Compare a run's labels with an earlier run's, sample by sample (joined on ids).

    Parameters
    ----------
    ids, labels : ndarray of shape (n_samples,)
        The later run's sample ids and labels (``0..k-1``).
    before_ids, before_labels : ndarray of shape (n_before,)
        The earlier run's.

    Returns
    -------
    change : LabelChange
    """
    _, now, then = np.intersect1d(ids, before_ids, assume_unique=True, return_indices=True)
    k_after = int(labels.max(initial=-1)) + 1
    k_before = int(before_labels.max(initial=-1)) + 1
    table = np.bincount(before_labels[then] * k_after + labels[now],
                        minlength=k_before * k_after).reshape(k_before, k_after)
    match = matched_columns(table)
    moved = int(np.sum(match[labels[now]] != before_labels[then]))
    sizes = np.bincount(labels, minlength=k_after)
    after = np.zeros(k_before, dtype=np.int64)
    after[match[match >= 0]] = sizes[match >= 0]
    return LabelChange(np.bincount(before_labels, minlength=k_before),
                       np.concatenate([after, sizes[match < 0]]), len(now), moved,
                       len(ids) - len(now))
