"""Stable cluster ids: give a new run's clusters the ids of the run it follows.

A consensus numbers its clusters arbitrarily: a run computed anew (``recluster
--from-scratch``, ``extend``) would give most samples another id than the run before it.
:func:`match_clusters` pairs each new cluster with the previous cluster it shares most
samples with (Hungarian assignment on the contingency table of the shared samples,
:func:`scipy.optimize.linear_sum_assignment`); a new cluster that shares no sample with its
partner (or has none) gets a fresh id after the largest previous one. The relabelling only
renames clusters: the partition, and so every score, is unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["apply_mapping", "match_clusters", "relabelling", "shared_labels"]


def match_clusters(previous: np.ndarray, new: np.ndarray,
                   previous_ids: np.ndarray | None = None,
                   new_ids: np.ndarray | None = None) -> dict[int, int]:
    """The id each new cluster takes: the previous cluster it overlaps most, one to one.

    Parameters
    ----------
    previous, new : ndarray of int of shape (n_shared,)
        The previous run's and the new run's labels of the samples both clustered.
    previous_ids : ndarray of int, optional
        Every id the previous run used (default: those in ``previous``); fresh ids start
        after the largest.
    new_ids : ndarray of int, optional
        Every id the new run used (default: those in ``new``): one with no shared sample
        gets a fresh id.

    Returns
    -------
    mapping : dict of int to int
        For each new id (sorted), its id after relabelling. Deterministic: the same
        labels give the same mapping.
    """
    previous, new = np.asarray(previous, dtype=np.int64), np.asarray(new, dtype=np.int64)
    old_ids = np.unique(previous)
    shared_new = np.unique(new)
    new_ids = shared_new if new_ids is None else np.union1d(shared_new, new_ids)
    used = old_ids if previous_ids is None else np.union1d(old_ids, previous_ids)
    mapping: dict[int, int] = {}
    if old_ids.size and shared_new.size:
        rows = np.searchsorted(new_ids, new)
        cols = np.searchsorted(old_ids, previous)
        table = np.zeros((new_ids.size, old_ids.size), dtype=np.int64)
        np.add.at(table, (rows, cols), 1)
        matched_rows, matched_cols = linear_sum_assignment(table, maximize=True)
        for r, c in zip(matched_rows, matched_cols, strict=True):
            if table[r, c] > 0:
                mapping[int(new_ids[r])] = int(old_ids[c])
    fresh = int(used.max()) + 1 if used.size else 0
    for label in new_ids:
        if int(label) not in mapping:
            mapping[int(label)] = fresh
            fresh += 1
    return dict(sorted(mapping.items()))


def apply_mapping(labels: np.ndarray, mapping: dict[int, int]) -> np.ndarray:
    """``labels`` with every id renamed by ``mapping`` (int64, same shape)."""
    labels = np.asarray(labels, dtype=np.int64)
    if not mapping:
        return labels.copy()
    lookup = np.arange(max(max(mapping), int(labels.max(initial=0))) + 1, dtype=np.int64)
    for old, new in mapping.items():
        lookup[old] = new
    return lookup[labels]


def shared_labels(previous_ids: np.ndarray, previous: np.ndarray, ids: np.ndarray,
                  labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two labellings of the samples in both: ``(previous[shared], labels[shared])``,
    matched by sample id (ids are unique within a dataset)."""
    _, in_previous, in_new = np.intersect1d(previous_ids, ids, assume_unique=True,
                                            return_indices=True)
    return np.asarray(previous)[in_previous], np.asarray(labels)[in_new]


def relabelling(previous_ids: np.ndarray, previous: np.ndarray, ids: np.ndarray,
                labels: np.ndarray, parent_run: str) -> dict[str, Any]:
    """How to rename a new run's clusters after run ``parent_run``, as kept in its record.

    Parameters
    ----------
    previous_ids, previous : ndarray of shape (n_previous,)
        Sample ids and labels of the previous run.
    ids, labels : ndarray of shape (n_samples,)
        Sample ids and consensus labels of the new run.
    parent_run : str

    Returns
    -------
    relabel : dict
        ``parent_run``; ``mapping``: ``[[consensus id, label], ...]`` (sorted);
        ``shared_samples``; ``kept``: the fraction of the shared samples whose label is
        their label in ``parent_run`` (1.0 when none are shared).
    """
    old, new = shared_labels(previous_ids, previous, ids, labels)
    mapping = match_clusters(old, new, np.unique(previous), np.unique(labels))
    relabelled = apply_mapping(new, mapping)
    kept = float(np.mean(relabelled == old)) if old.size else 1.0
    return {"parent_run": parent_run, "mapping": [[k, v] for k, v in mapping.items()],
            "shared_samples": int(old.size), "kept": round(kept, 6)}
