"""``n_clusters="auto"`` in the best mode: k by the eigengap of a neighbour graph of a sample
of the joint space (:mod:`fastmice._auto_k_graph`)."""

import numpy as np
import pytest

from fastmice import FastMICE
from fastmice._auto_k_graph import (
    GRAPH_SAMPLE,
    JOINT_RULE,
    choose_n_clusters_joint,
    graph_eigengap_choice,
)
from fastmice._joint import JointSpace
from fastmice.datasets import make_multiview_blobs
from fastmice.metrics import clustering_scores


@pytest.mark.parametrize(("n_samples", "k"), [(600, 40), (2500, 60)])
def test_many_small_clusters_are_found(n_samples, k):
    """15 to 40 samples a cluster: the view groups' base clusterings are too few and too
    coarse to show such a k (the consensus graph's eigengap chose 8 of 40 and 52 of 60 on
    these data); the joint space's neighbour graph does."""
    Xs, y = make_multiview_blobs(n_samples=n_samples, n_views=3, n_clusters=k, random_state=1)
    model = FastMICE("auto", mode="best", random_state=0).fit(Xs)
    assert model.n_clusters_ == k
    assert model.k_candidates_[0][0] == k
    assert model.consensus_.k_choice.rule == JOINT_RULE  # what is printed and reported
    assert clustering_scores(y, model.labels_)["nmi"] > 0.9
    assert np.unique(model.labels_).size == k


def test_the_candidates_reach_a_tenth_of_the_samples():
    rng = np.random.default_rng(0)
    choice = graph_eigengap_choice(rng.standard_normal((500, 6)), seed=0)
    assert list(choice.candidates) == list(range(2, 51))
    assert choice.scores.shape == choice.candidates.shape
    assert choice.n_clusters == choice.ranked(1)[0][0]
    tiny = graph_eigengap_choice(rng.standard_normal((12, 3)), seed=0)
    assert list(tiny.candidates) == [2]


def test_on_many_samples_the_graph_is_built_on_a_sample(monkeypatch):
    """The cost is fixed in N beyond one pass for the joint space's means and scales: the
    graph is built on at most GRAPH_SAMPLE rows, so the candidates stop at 200."""
    read = []
    transform = JointSpace.transform

    def counting(self, Xs, rows):
        read.append(len(rows) if isinstance(rows, np.ndarray) else None)
        return transform(self, Xs, rows)

    monkeypatch.setattr(JointSpace, "transform", counting)
    Xs, _ = make_multiview_blobs(n_samples=6000, n_views=2, n_clusters=5, random_state=0)
    choice = choose_n_clusters_joint(Xs, ("euclidean", "euclidean"), seed=0)
    assert read == [GRAPH_SAMPLE]
    assert choice.candidates[-1] == GRAPH_SAMPLE // 10 and choice.n_clusters == 5


def test_the_choice_and_labels_do_not_depend_on_the_threads():
    Xs, _ = make_multiview_blobs(n_samples=600, n_views=3, n_clusters=40, random_state=2)
    fits = [FastMICE("auto", mode="best", random_state=3, n_jobs=n_jobs).fit(Xs)
            for n_jobs in (1, 2)]
    assert fits[0].k_candidates_ == fits[1].k_candidates_
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
