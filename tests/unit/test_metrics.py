"""fastmice.metrics: agreement with scikit-learn, hand-checked toy cases, invariances, errors."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from fastmice.metrics import clustering_accuracy, clustering_scores, purity_score


@pytest.mark.parametrize("seed", range(5))
def test_nmi_and_ari_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    y_true = rng.integers(0, int(rng.integers(2, 8)), n)
    y_pred = rng.integers(0, int(rng.integers(2, 12)), n)
    scores = clustering_scores(y_true, y_pred)
    assert set(scores) == {"nmi", "ari", "acc", "purity"}
    assert all(type(v) is float for v in scores.values())
    nmi_max = normalized_mutual_info_score(y_true, y_pred, average_method="max")
    assert scores["nmi"] == pytest.approx(nmi_max, abs=1e-12)
    assert scores["ari"] == pytest.approx(adjusted_rand_score(y_true, y_pred), abs=1e-12)


def test_nmi_is_max_normalised_not_arithmetic():
    # Different cluster counts make H(true) != H(pred), so the two normalisations differ.
    y_true = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    y_pred = [0, 0, 1, 1, 2, 2, 3, 3, 3]
    nmi = clustering_scores(y_true, y_pred)["nmi"]
    arithmetic = normalized_mutual_info_score(y_true, y_pred)
    assert nmi == pytest.approx(normalized_mutual_info_score(y_true, y_pred, average_method="max"))
    assert nmi < arithmetic - 0.01


def test_hand_checked_toy_case():
    # Contingency (rows true 0,1,2; columns pred 0,1,2): [[0,2,0],[2,0,0],[1,0,1]].
    # Best matching pred1->0, pred0->1, pred2->2 covers 2+2+1 = 5 of 6 samples;
    # the column maxima are 2, 2, 1, so purity is also 5/6.
    y_true = [0, 0, 1, 1, 2, 2]
    y_pred = [1, 1, 0, 0, 0, 2]
    assert clustering_accuracy(y_true, y_pred) == pytest.approx(5 / 6)
    assert purity_score(y_true, y_pred) == pytest.approx(5 / 6)
    scores = clustering_scores(y_true, y_pred)
    assert scores["acc"] == pytest.approx(5 / 6) and scores["purity"] == pytest.approx(5 / 6)


def test_accuracy_and_purity_differ_when_clusters_split_a_class():
    # Class 0 is split over clusters 0 and 1: purity credits both (6/6), accuracy can
    # match only one of them to class 0 (2 + 2 of 6), since cluster 2 takes class 1.
    y_true = [0, 0, 0, 0, 1, 1]
    y_pred = [0, 0, 1, 1, 2, 2]
    assert clustering_accuracy(y_true, y_pred) == pytest.approx(4 / 6)
    assert purity_score(y_true, y_pred) == pytest.approx(1.0)


def test_fewer_clusters_than_classes():
    # One cluster for everything: accuracy and purity are the largest class share.
    y_true = [0, 0, 0, 1, 1, 2]
    y_pred = [7] * 6
    assert clustering_accuracy(y_true, y_pred) == pytest.approx(3 / 6)
    assert purity_score(y_true, y_pred) == pytest.approx(3 / 6)
    assert clustering_scores(y_true, y_pred)["ari"] == pytest.approx(0.0)


def test_perfect_clustering_with_renamed_string_labels():
    y_true = np.array(["cat", "cat", "dog", "dog", "emu"])
    y_pred = np.array([5, 5, -1, -1, 9])
    assert clustering_scores(y_true, y_pred) == {
        "nmi": pytest.approx(1.0),
        "ari": pytest.approx(1.0),
        "acc": pytest.approx(1.0),
        "purity": pytest.approx(1.0),
    }


def test_invariant_to_relabelling_and_sample_order():
    rng = np.random.default_rng(7)
    y_true = rng.integers(0, 4, 200)
    y_pred = np.where(rng.random(200) < 0.7, y_true, rng.integers(0, 5, 200))
    base = clustering_scores(y_true, y_pred)
    renamed = rng.permutation(5)[y_pred] + 100
    order = rng.permutation(200)
    for other in (
        clustering_scores(y_true, renamed),
        clustering_scores(y_true[order], y_pred[order]),
    ):
        assert other == pytest.approx(base, abs=1e-12)
    # acc and purity are not symmetric in general, but acc is (one-to-one matching).
    assert clustering_accuracy(y_pred, y_true) == pytest.approx(base["acc"])


@pytest.mark.parametrize(
    ("y_true", "y_pred", "error", "match"),
    [
        ([0, 1, 1], [0, 1], ValueError, r"len\(y_true\)=3 and len\(y_pred\)=2"),
        ([[0, 1], [1, 0]], [0, 1], ValueError, r"y_true must be a 1-D array.*shape \(2, 2\)"),
        ([0, 1], np.zeros((2, 1)), ValueError, r"y_pred must be a 1-D array"),
        ([], [], ValueError, "y_true is empty"),
        ([0.0, np.nan], [0, 1], ValueError, "y_true contains NaN"),
        ([0, 1], np.array([1 + 0j, 2j]), TypeError, "y_pred must hold integer or string"),
        (np.array([0, "a"], dtype=object), [0, 1], TypeError, "y_true mixes label types"),
    ],
)
@pytest.mark.parametrize("func", [clustering_scores, clustering_accuracy, purity_score])
def test_errors(func, y_true, y_pred, error, match):
    with pytest.raises(error, match=match):
        func(y_true, y_pred)
