"""The FastMICE estimator: contract, determinism, containers, predict, errors, edge cases."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import adjusted_rand_score

from fastmice import (
    EnsembleParams,
    FastMICE,
    build_group_graph,
    cluster_group,
    consensus_partition,
    draw_view_groups,
    fast_mice,
    resolve_seed,
)

SMALL = {"n_groups": 6, "n_anchors": 50}


def test_estimator_contract(small_views):
    Xs, y = small_views
    model = FastMICE(3, random_state=0, **SMALL)
    assert not [a for a in vars(model) if a.endswith("_")]
    assert model.fit(Xs) is model
    assert model.labels_.shape == (300,) and model.base_labels_.shape == (300, 6)
    assert len(model.view_groups_) == 6 and model.n_features_in_ == [5, 8]
    assert adjusted_rand_score(y, model.labels_) == 1
    params = model.get_params()
    assert params["n_clusters"] == 3 and params["n_groups"] == 6
    twin = clone(model).set_params(n_groups=7)
    assert twin.n_groups == 7 and not hasattr(twin, "labels_")
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(Xs), model.predict(Xs))
    np.testing.assert_array_equal(FastMICE(3, random_state=0, **SMALL).fit_predict(Xs),
                                  model.labels_)


def test_fit_is_the_composition_of_the_steps_in_any_group_order(small_views):
    Xs, _ = small_views
    model = FastMICE(3, random_state=11, **SMALL).fit(Xs)
    seed = resolve_seed(11)
    specs = draw_view_groups([5, 8], 300, EnsembleParams(3, n_groups=6, n_anchors=50), seed=seed)
    assert specs == model.view_groups_
    base = {}
    for spec in reversed(specs):  # any order, any process: each group needs only its spec
        B, _ = build_group_graph(Xs, spec)
        base[spec.group_index] = cluster_group(B, spec).labels_
    stacked = np.column_stack([base[g] for g in range(6)])
    np.testing.assert_array_equal(stacked, model.base_labels_)
    np.testing.assert_array_equal(consensus_partition(stacked, 3, seed=seed).labels_,
                                  model.labels_)


def test_same_random_state_same_labels_serial_and_threads(make_blobs):
    Xs, _ = make_blobs(n_samples=400, n_clusters=4, dims=(6, 7, 3), spread=2.0)
    serial = FastMICE(4, random_state=5, **SMALL).fit(Xs)
    threads = FastMICE(4, random_state=5, n_jobs=2, **SMALL).fit(Xs)
    np.testing.assert_array_equal(serial.base_labels_, threads.base_labels_)
    np.testing.assert_array_equal(serial.labels_, threads.labels_)
    other = FastMICE(4, random_state=6, **SMALL).fit(Xs)
    assert not np.array_equal(other.base_labels_, serial.base_labels_)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_and_sparse_views_agree(dtype):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 80)
    Xs = []
    for d in (40, 60):  # sparse count-like views, as text data
        rates = rng.random((3, d)) * (rng.random((3, d)) < 0.3) * 3
        Xs.append(rng.poisson(rates[y]).astype(dtype))
    for metric in ("euclidean", "cosine"):
        dense = FastMICE(3, metric=metric, random_state=0, **SMALL).fit(Xs)
        sparse = FastMICE(3, metric=metric, random_state=0, **SMALL).fit(
            [sp.csr_matrix(X) for X in Xs])
        assert adjusted_rand_score(dense.labels_, sparse.labels_) >= 0.95
        assert dense.group_anchors_[0].members[0].anchors.dtype == np.float32  # GRAPH_DTYPE


def test_predict_agrees_with_training_labels_and_places_new_samples(make_blobs):
    Xs, y = make_blobs(n_samples=600, n_clusters=4, dims=(6, 9), spread=1.0)
    train, test = [X[:500] for X in Xs], [X[500:] for X in Xs]
    model = FastMICE(4, random_state=0, **SMALL).fit(train)
    assert adjusted_rand_score(model.labels_, model.predict(train)) >= 0.95
    assert adjusted_rand_score(y[500:], model.predict(test)) >= 0.95


def test_fast_mice_function(small_views):
    Xs, _y = small_views
    np.testing.assert_array_equal(fast_mice(Xs, 3, random_state=1, **SMALL),
                                  FastMICE(3, random_state=1, **SMALL).fit(Xs).labels_)


def test_predict_before_fit_raises(small_views):
    with pytest.raises(NotFittedError):
        FastMICE(3).predict(small_views[0])


GOOD = [np.zeros((10, 2)) + np.arange(10)[:, None], np.ones((10, 3)) * np.arange(10)[:, None]]


@pytest.mark.parametrize(
    ("Xs", "params", "error", "match"),
    [
        ([], {}, ValueError, "empty list"),
        ([GOOD[0], GOOD[1][:9]], {}, ValueError, "View 1 has 9 samples; expected 10"),
        ([GOOD[0], np.where(np.arange(30).reshape(10, 3) == 4, np.nan, 1.0)], {}, ValueError,
         r"View 1 has 1 row\(s\) with NaN or infinite values \(first at row 1\)"),
        ([GOOD[0], np.full((10, 3), np.inf)], {}, ValueError, "View 1 has 10 row"),
        ([GOOD[0], np.zeros((10, 0))], {}, ValueError, "View 1 has no features"),
        ([np.arange(10.0)], {}, ValueError, r"View 0 must be 2-D .* shape \(10,\)"),
        ([GOOD[0], np.array([["a", "b"]] * 10)], {}, TypeError, "View 1 has dtype <U1"),
        ("not views", {}, TypeError, "Xs must be a list of views"),
        (GOOD, {"n_clusters": 1}, ValueError, "n_clusters=1 must be >= 2"),
        (GOOD, {"n_clusters": 11}, ValueError, "n_clusters=11 must be <= n_samples=10"),
        (GOOD, {"n_clusters": 2.5}, TypeError, "n_clusters must be an int; got 2.5"),
        (GOOD, {"n_groups": 0}, ValueError, "n_groups=0 must be >= 1"),
        (GOOD, {"n_anchors": -3}, ValueError, "n_anchors=-3 must be >= 1"),
        (GOOD, {"feature_ratio": (0.5, 1.5)}, ValueError, "feature_ratio"),
        (GOOD, {"feature_ratio": 0.5}, TypeError, "feature_ratio must be a pair"),
        (GOOD, {"metric": "manhattan"}, ValueError, "Unknown metric 'manhattan'"),
        (GOOD, {"metric": ["cosine", "l1"]}, ValueError, "Unknown metric 'l1' for view 1"),
        (GOOD, {"metric": ["cosine"]}, ValueError, "metric has 1 entries; expected one per view"),
        (GOOD, {"random_state": "seed"}, TypeError, "random_state must be"),
    ],
)
def test_bad_input_names_the_problem(Xs, params, error, match):
    params = {"n_clusters": 2, **params}
    with pytest.raises(error, match=match):
        FastMICE(**params).fit(Xs)


def test_predict_checks_the_views_against_the_fit(small_views):
    Xs, _ = small_views
    model = FastMICE(3, random_state=0, **SMALL).fit(Xs)
    with pytest.raises(ValueError, match="View 1 has 7 features; the model was fitted with 8"):
        model.predict([Xs[0], Xs[1][:, :7]])
    with pytest.raises(ValueError, match="Xs has 1 views; the model was fitted on 2"):
        model.predict(Xs[:1])


@pytest.mark.parametrize(
    "case",
    ["n20", "single_view", "one_feature", "constant_features", "duplicates", "k_distinct",
     "cosine_zero_rows", "int_dtype"],
)
def test_degenerate_but_valid_input(case, make_blobs):
    Xs, _y = make_blobs(n_samples=20, n_clusters=2, dims=(3, 4))
    k, metric = 2, "euclidean"
    if case == "single_view":
        Xs = Xs[:1]
    elif case == "one_feature":
        Xs = [Xs[0][:, :1], Xs[1]]
    elif case == "constant_features":
        Xs = [np.hstack([X, np.ones((20, 2))]) for X in Xs]
    elif case == "duplicates":
        Xs = [np.vstack([X[:10], X[:10]]) for X in Xs]
    elif case == "k_distinct":  # 4 distinct rows, each 5 times, and k = 4
        Xs = [np.repeat(X[:4], 5, axis=0) for X in Xs]
        k = 4
    elif case == "cosine_zero_rows":
        Xs = [np.where(np.arange(20)[:, None] < 3, 0.0, np.abs(X)) for X in Xs]
        metric = "cosine"
    elif case == "int_dtype":
        Xs = [np.round(X * 10).astype(np.int64) for X in Xs]
    labels = FastMICE(k, metric=metric, random_state=0).fit_predict(Xs)
    assert labels.shape == (20,) and len(np.unique(labels)) == k
    if case == "k_distinct":  # copies of a row share a label, distinct rows do not
        assert adjusted_rand_score(np.tile(np.arange(4), 5).reshape(5, 4).T.ravel(),
                                   labels) == 1


def test_groups_start_longest_first_and_results_keep_group_order(make_blobs):
    from fastmice import ViewGroupSpec, longest_first

    def spec(index: int, widths: tuple[int, ...]) -> ViewGroupSpec:
        return ViewGroupSpec(index, 0, tuple(range(len(widths))),
                             tuple(tuple(range(w)) for w in widths),
                             ("euclidean",) * len(widths), 10, 5, 3)

    specs = [spec(0, (5,)), spec(1, (300, 200)), spec(2, (5,)), spec(3, (400,))]
    assert longest_first(specs) == [1, 3, 0, 2]  # ties keep group order
    assert longest_first([s.to_dict() for s in specs]) == [1, 3, 0, 2]
    Xs, _ = make_blobs(n_samples=600, dims=(5, 30, 12))  # >= 400: groups run in threads
    one = FastMICE(3, n_groups=6, n_anchors=40, random_state=3, n_jobs=1).fit(Xs)
    two = FastMICE(3, n_groups=6, n_anchors=40, random_state=3, n_jobs=2).fit(Xs)
    assert [s.group_index for s in two.view_groups_] == list(range(6))
    np.testing.assert_array_equal(one.base_labels_, two.base_labels_)
    np.testing.assert_array_equal(one.labels_, two.labels_)
