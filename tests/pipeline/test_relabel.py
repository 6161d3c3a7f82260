"""Stable cluster ids: the Hungarian relabelling of a new run after the run it follows."""

from __future__ import annotations

import numpy as np
import pytest

import fastmice
from fastmice.metrics import clustering_scores
from pipeline.relabel import apply_mapping, match_clusters, relabelling


def _permuted(labels, permutation):
    return np.asarray(permutation)[labels]


def test_a_permuted_partition_gets_the_previous_ids_back():
    rng = np.random.default_rng(0)
    previous = rng.integers(0, 6, 500)
    new = _permuted(previous, [3, 5, 0, 1, 4, 2])
    mapping = match_clusters(previous, new)
    np.testing.assert_array_equal(apply_mapping(new, mapping), previous)


def test_relabelling_keeps_the_partition_and_is_deterministic():
    rng = np.random.default_rng(1)
    previous = rng.integers(0, 8, 2000)
    new = _permuted(previous, rng.permutation(8))
    moved = rng.random(2000) < 0.1  # 10 % of the samples change cluster
    new[moved] = rng.integers(0, 8, moved.sum())
    ids = np.arange(2000)
    first = relabelling(ids, previous, ids, new, "run-a")
    again = relabelling(ids, previous, ids, new, "run-a")
    assert first == again
    relabelled = apply_mapping(new, dict(map(tuple, first["mapping"])))
    assert clustering_scores(new, relabelled)["nmi"] == 1.0
    assert clustering_scores(previous, relabelled) == clustering_scores(previous, new)
    assert first["kept"] == pytest.approx(np.mean(relabelled == previous))
    assert first["kept"] >= 0.88 and first["shared_samples"] == 2000


def test_samples_are_matched_by_id_not_by_position():
    previous_ids = np.array([10, 11, 12, 13, 14, 15])
    previous = np.array([0, 0, 1, 1, 2, 2])
    ids = np.array([15, 14, 13, 12, 11, 10, 16, 17])  # reordered, plus two new samples
    labels = np.array([1, 1, 2, 2, 0, 0, 0, 1])
    relabel = relabelling(previous_ids, previous, ids, labels, "p")
    assert relabel["mapping"] == [[0, 0], [1, 2], [2, 1]]
    assert relabel["shared_samples"] == 6 and relabel["kept"] == 1.0


def test_new_clusters_without_a_match_get_fresh_ids_after_the_previous_ones():
    previous = np.array([0, 0, 1, 1, 4, 4])
    new = np.array([2, 2, 0, 0, 0, 0])
    ids = np.arange(6)
    labels = np.concatenate([new, [5, 5, 1]])  # clusters 5 and 1: new samples only
    relabel = relabelling(ids, previous, np.arange(9), labels, "p")
    mapping = dict(map(tuple, relabel["mapping"]))
    assert mapping[2] == 0 and mapping[0] in (1, 4)
    assert sorted((mapping[1], mapping[5])) == [5, 6]  # after the largest previous id, 4
    assert len(set(mapping.values())) == len(mapping)  # one to one


def test_more_new_clusters_than_previous_ones():
    previous = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    new = np.array([0, 0, 2, 2, 1, 1, 1, 1])
    mapping = match_clusters(previous, new)
    assert mapping[1] == 1 and sorted([mapping[0], mapping[2]]) in ([0, 2],)


def test_unchanged_samples_keep_their_ids_after_an_independent_run():
    """Two fits of other ensembles of the same data number their clusters independently;
    matched, at least 95 % of the samples keep their id."""
    from fastmice.datasets import make_multiview_blobs

    Xs, _ = make_multiview_blobs(n_samples=900, n_views=2, n_clusters=6, random_state=4)
    first = fastmice.FastMICE(6, n_groups=6, n_anchors=60, random_state=0).fit(Xs).labels_
    other = fastmice.FastMICE(6, n_groups=9, n_anchors=60, random_state=5).fit(Xs).labels_
    assert np.mean(other == first) < 0.5  # as numbered by the fit
    ids = np.arange(900)
    relabel = relabelling(ids, first, ids, other, "first")
    assert relabel["kept"] >= 0.95
    assert relabel["kept"] == pytest.approx(
        np.mean(apply_mapping(other, dict(map(tuple, relabel["mapping"]))) == first))
