"""The generated family of benchmarks/families.py: the same point gives the same data, every
kind and size is what it says, and the per-view signal goes from easy to hard: at signal 0
with complementary views one view alone stays near the NMI of its merged pairs while the
views side by side separate every cluster."""

import numpy as np
import pytest
import scipy.sparse as sp
from benchmark_loader import load_benchmark
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score
from threadpoolctl import threadpool_limits

families = load_benchmark("families")


def _kmeans_nmi(X, y: np.ndarray, k: int) -> float:
    with threadpool_limits(1):  # the tests share 2 cores; one thread does not wait on others
        labels = KMeans(k, n_init=3, random_state=0).fit_predict(X)
    return normalized_mutual_info_score(y, labels, average_method="max")


def _same(a, b) -> bool:
    if sp.issparse(a):
        return sp.issparse(b) and (a != b).nnz == 0
    return a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("kind", families.KINDS)
def test_same_point_same_data_and_another_seed_other_data(kind):
    p = families.point(300, 6, 3, 0.5, True, noise=True, kind=kind, seed=7)
    Xs, y = families.make_point(p)
    again, y_again = families.make_point(p)
    assert np.array_equal(y, y_again) and all(map(_same, Xs, again))
    other, _ = families.make_point(families.point(300, 6, 3, 0.5, True, noise=True,
                                                  kind=kind, seed=8))
    assert not _same(Xs[0], other[0])


def test_kinds_are_what_they_declare():
    n = 400
    for kind in families.KINDS:
        p = families.point(n, 5, 3, 0.5, False, noise=True, kind=kind, seed=1)
        Xs, y = families.make_point(p)
        assert len(Xs) == 4 and y.shape == (n,) and set(np.unique(y)) == set(range(5))
        for X in Xs:
            assert X.shape[0] == n and 16 <= X.shape[1] <= 512
            if kind == "sparse":
                assert sp.isspmatrix_csr(X) and X.nnz < 0.1 * n * X.shape[1]
                assert X.min() >= 0 and np.all(np.asarray(X.sum(axis=1)) > 0)
            else:
                assert isinstance(X, np.ndarray)
            if kind == "dense":
                assert X.dtype == np.float32 and X.min() < 0
            if kind == "count":
                assert np.issubdtype(X.dtype, np.integer) and X.min() >= 0 and X.max() > 1
            if kind == "compositional":
                assert X.min() >= 0 and np.allclose(X.sum(axis=1), 1.0)
                assert len(np.unique(X[:, 0])) > 5  # rows of histograms, not constants


def test_relation_views_are_symmetric_links_as_homophilous_as_declared():
    p = families.relation_point(1200, 4, 0.25, ((3, 0.8), (40, 0.3)), seed=5)
    Xs, y = families.make_point(p)
    again, _ = families.make_point(p)
    assert all(map(_same, Xs, again)) and p.n_views == len(Xs) == 3
    assert Xs[0].shape == (1200, 1000) and sp.isspmatrix_csr(Xs[0])
    for X, (degree, homophily) in zip(Xs[1:], p.relations, strict=True):
        assert X.shape == (1200, 1200) and (X != X.T).nnz == 0 and np.all(X.diagonal() >= 1)
        off_diagonal = X.tolil()
        off_diagonal.setdiag(0)
        rows, columns = off_diagonal.tocsr().nonzero()
        # Links go both ways: about 2 x degree a row, a share of them within the cluster
        # of homophily + (1 - homophily) / k (the rest land anywhere).
        assert 1.6 * degree < rows.size / 1200 < 2.2 * degree
        expected = homophily + (1 - homophily) / 4
        assert abs(np.mean(y[rows] == y[columns]) - expected) < 0.05


def test_skewed_sizes_are_100_to_1_and_balanced_differ_by_one():
    _, y = families.make_point(families.point(5000, 10, 2, 0.5, sizes="skewed", seed=3))
    counts = np.bincount(y)
    assert counts.sum() == 5000 and 97 <= counts.max() / counts.min() <= 103
    assert np.all(np.diff(np.sort(counts)) > 0)  # geometric, every size its own
    _, y = families.make_point(families.point(1003, 10, 2, 0.5, seed=3))
    assert np.ptp(np.bincount(y)) == 1


def test_signal_zero_complementary_only_the_views_together_separate_the_clusters():
    k = 8
    p = families.point(500, k, 4, 0.0, True, seed=11)
    Xs, y = families.make_point(p)
    joint = _kmeans_nmi(np.hstack(Xs), y, k)
    for v, X in enumerate(Xs):
        merged = families.merged_nmi(p, v)  # log(4) / log(8) = 0.667 for 8 balanced clusters
        assert merged == pytest.approx(2 / 3, abs=1e-3)
        assert _kmeans_nmi(X, y, k) <= merged + 0.04
    assert joint >= 0.95


def test_signal_one_every_view_separates_every_cluster():
    k = 8
    for complementary in (True, False):
        Xs, y = families.make_point(families.point(500, k, 4, 1.0, complementary, seed=12))
        assert min(_kmeans_nmi(X, y, k) for X in Xs) >= 0.9
        assert _kmeans_nmi(np.hstack(Xs), y, k) >= 0.95


def test_redundant_weak_views_are_stronger_together_and_signal_is_monotone():
    k = 8
    single, joint = [], []
    for s in (0.0, 0.5, 1.0):
        Xs, y = families.make_point(families.point(500, k, 4, s, False, seed=13))
        single.append(_kmeans_nmi(Xs[0], y, k))
        joint.append(_kmeans_nmi(np.hstack(Xs), y, k))
    assert single[0] < 0.3 and joint[0] > single[0] + 0.08  # measured 0.104 and 0.217
    assert joint[1] > single[1] + 0.2  # measured 0.665 and 0.995
    assert single[0] < single[1] < single[2] and joint[0] < joint[1]


def test_noise_view_carries_nothing_about_the_labels():
    p = families.point(1000, 5, 2, 1.0, False, noise=True, seed=14)
    Xs, y = families.make_point(p)
    scores = sorted(_kmeans_nmi(X, y, 5) for X in Xs)
    assert scores[0] < 0.03 and scores[1] > 0.9


def test_complementary_needs_clusters_the_views_can_tell_apart():
    with pytest.raises(ValueError, match="complementary views need k >= 3"):
        families.make_point(families.point(100, 2, 3, 0.0, True, seed=0))
    with pytest.raises(ValueError, match="signal"):
        families.make_point(families.point(100, 4, 3, 1.5, True, seed=0))
    with pytest.raises(ValueError, match="too few for 30 clusters of sizes 100:1"):
        families.make_point(families.point(40, 30, 3, 0.5, True, sizes="skewed", seed=0))


def test_point_lists_cover_the_sweep_and_the_confirmation_is_apart():
    design, confirmation = families.DESIGN_POINTS, families.CONFIRMATION_POINTS
    for points in (design, confirmation):
        assert len({p.name for p in points}) == len(points)
        assert {p.kind for p in points} == set(families.KINDS)
        assert {p.sizes for p in points} == set(families.SIZES)
        assert {p.complementary for p in points} == {True, False}
        assert any(p.noise_view for p in points)
        assert sum(p.large for p in points) == 3 and all(p.n_samples <= 5000
                                                         for p in points if not p.large)
    assert {0.0, 1.0} <= {p.signal for p in design}
    assert min(p.n_samples for p in design) == 40 and max(p.n_samples for p in design) == 200_000
    assert min(p.n_clusters for p in design) == 2 and max(p.n_clusters for p in design) == 400
    assert min(p.n_views for p in design) == 2 and max(p.n_views for p in design) == 10
    assert not {p.seed for p in design} & {p.seed for p in confirmation}
    assert not {p.signal for p in design} & {p.signal for p in confirmation}
    relation = [p for part in load_benchmark("relations").PARTS.values() for p in part]
    assert len({p.name for p in relation}) == len({p.seed for p in relation}) == 24
    assert {p.kind for p in relation} == {"relation"}


def test_sweep_concatenates_views_as_they_are_and_counts_points_below():
    sweep = load_benchmark("family_sweep")
    Xs, _ = families.make_point(families.point(50, 4, 2, 0.5, kind="sparse", seed=1))
    X = sweep.concatenate([Xs[0], Xs[1].toarray()])
    assert sp.isspmatrix_csr(X) and X.shape == (50, Xs[0].shape[1] + Xs[1].shape[1])
    rows = [{"point": p, "method": m, "seed": s, "nmi": nmi, "seconds": 1.0}
            for p, m, s, nmi in (("a", "paper", 0, 0.90), ("a", "best", 0, 0.884),
                                 ("a", "concat-kmeans", 0, 0.95), ("b", "paper", 0, 0.5),
                                 ("b", "best", 0, 0.5), ("b", "concat-kmeans", 0, 0.505),
                                 ("a", "best", 1, 0.886), ("a", "paper", 1, 0.90),
                                 ("a", "concat-kmeans", 1, 0.95), ("b", "paper", 1, 0.5),
                                 ("b", "best", 1, 0.5), ("b", "concat-kmeans", 1, 0.505))]
    summary = sweep.summarise(rows)
    assert summary["best"]["below_concat_kmeans"] == ["a"]  # b: 0.5 points below only
    assert summary["best"]["below_paper"] == ["a"]  # mean 0.885 against 0.900
    assert summary["paper"]["below_paper"] == [] and summary["best"]["points"] == 2
    rows[1]["nmi"] = rows[6]["nmi"] = 0.891  # exactly 0.9 points below: not counted
    assert sweep.summarise(rows)["best"]["below_paper"] == []
    assert "| a | 0.900 | 0.891 | 0.950 |" in sweep.format_tables(rows)


def test_a_method_may_change_several_fields_of_the_best_mode():
    sweep = load_benchmark("family_sweep")
    assert sweep.split_methods("paper,best:weighting=agreement,centrality=False,best,"
                               "concat-kmeans") == [
        "paper", "best:weighting=agreement,centrality=False", "best", "concat-kmeans"]
