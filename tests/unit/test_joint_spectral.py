"""The best mode's spectral candidate (fastmice._joint_spectral)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from benchmark_loader import load_benchmark
from sklearn.cluster import KMeans

from fastmice import FastMICE, _best, _joint_spectral
from fastmice._consensus import ConsensusPartition
from fastmice.metrics import clustering_scores

families = load_benchmark("families")


def _nmi(y, labels) -> float:
    return clustering_scores(y, labels)["nmi"]


@pytest.fixture(scope="module")
def small_clusters():
    # 12 clusters of 10 samples in 3 complementary weak views (each merges the clusters in
    # pairs of its own), as a face set of a few photos a person: a point explored while the
    # candidate was designed (not one of the parts that confirmed it).
    return families.make_point(families.point(120, 12, 3, 0.25, True, seed=7001))


def test_spectral_clustering_keeps_small_clusters_that_the_consensus_blurs(small_clusters,
                                                                           monkeypatch):
    Xs, y = small_clusters
    concat = KMeans(12, n_init=10, random_state=0).fit_predict(np.hstack(Xs))
    paper = FastMICE(12, mode="paper", random_state=0).fit_predict(Xs)
    best = FastMICE(12, mode="best", random_state=0).fit(Xs)
    monkeypatch.setattr(_best, "CHOICES",
                        dataclasses.replace(_best.CHOICES, spectral_cluster_size=0))
    without = FastMICE(12, mode="best", random_state=0).fit(Xs)
    # the paper mode far below k-means on the concatenation, and the best mode without the
    # candidate still below it; with it, not
    assert _nmi(y, paper) < _nmi(y, concat) - 0.05
    assert _nmi(y, without.labels_) < _nmi(y, concat) - 0.02
    assert best.consensus_.source == "spectral"
    assert without.consensus_.source != "spectral"
    assert _nmi(y, best.labels_) >= _nmi(y, concat) - 0.01


def test_the_spectral_labels_are_the_same_in_threads(small_clusters):
    # In threads the candidate is made beside the consensus and the choice of its source.
    Xs, _ = small_clusters
    fits = [FastMICE(12, mode="best", random_state=3, n_jobs=n).fit(Xs) for n in (1, 2, 4)]
    for fit in fits[1:]:
        np.testing.assert_array_equal(fit.labels_, fits[0].labels_)
        assert fit.consensus_.source == fits[0].consensus_.source


def test_the_candidate_replaces_the_labels_only_where_it_agrees_better(small_clusters):
    Xs, _ = small_clusters
    fitted = FastMICE(12, mode="best", random_state=0).fit(Xs)
    consensus = fitted.consensus_
    members = np.hstack([fitted.base_labels_, consensus.joint.member_labels_])

    def offered(labels):
        return _joint_spectral.with_spectral_candidate(
            consensus.joint, Xs, labels, members, consensus.member_weights, seed=0)

    noise = np.random.default_rng(0).integers(0, 12, len(fitted.labels_))
    kept = offered(noise)
    assert kept is not None
    prepared = _joint_spectral.spectral_candidate(consensus.joint, Xs, len(noise), seed=0)
    made_before = _joint_spectral.with_spectral_candidate(
        consensus.joint, Xs, noise, members, consensus.member_weights, seed=0,
        prepared=prepared)
    np.testing.assert_array_equal(made_before.labels_, kept.labels_)
    np.testing.assert_array_equal(made_before.centers, kept.centers)
    assert offered(kept.labels_) is None  # as good, not better: the labels stay
    assert kept.centers.shape == consensus.joint.centers.shape


def test_the_candidate_is_tried_on_few_samples_a_cluster_only(monkeypatch):
    due = _joint_spectral.spectral_due
    assert due(165, 15) and due(2000, 40)
    assert not due(2000, 39)  # 51 samples a cluster
    assert not due(_joint_spectral.SPECTRAL_MAX_SAMPLES + 1, 400)
    assert not due(10, 10)
    monkeypatch.setattr(_best, "CHOICES",
                        dataclasses.replace(_best.CHOICES, spectral_cluster_size=0))
    assert not due(165, 15)


def test_a_spectral_consensus_round_trips_and_labels_new_samples(small_clusters):
    Xs, _ = small_clusters
    fitted = FastMICE(12, mode="best", random_state=0).fit(Xs)
    assert fitted.consensus_.source == "spectral"
    restored = ConsensusPartition.from_arrays(fitted.consensus_.to_arrays())
    assert restored.source == "spectral"
    new = [X[:40] for X in Xs]
    predicted = restored.predict(fitted.base_labels_[:40], new)
    np.testing.assert_array_equal(predicted, fitted.consensus_.joint.predict(new)[0])
    # the centres are the clusters' means: most samples are nearest their own cluster's
    assert np.mean(predicted == fitted.labels_[:40]) > 0.8
