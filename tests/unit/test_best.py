"""The best mode and metric="auto": the rule, the empty rows, the weights, the consensus."""

import numpy as np
import pytest
import scipy.sparse as sp

from fastmice import EnsembleParams, FastMICE, consensus_partition
from fastmice._best import agreement_weights, empty_rows, informed_labels, weighted_incidence
from fastmice._metric_rule import choose_metric, is_compositional, resolve_metrics
from fastmice.datasets import make_words_and_citations
from fastmice.metrics import clustering_scores

SMALL = {"n_groups": 6, "n_anchors": 50}


def _nmi(y, labels):
    return clustering_scores(y, labels)["nmi"]


def test_metric_rule_picks_cosine_for_sparse_non_negative_views():
    rng = np.random.default_rng(0)
    counts = sp.random(500, 300, density=0.02, random_state=0, format="csr") * 5
    assert choose_metric(counts) == "cosine"
    assert choose_metric(counts.toarray()) == "cosine"  # dense storage, same values
    assert choose_metric(-counts) == "euclidean"  # negative values: not counts
    assert choose_metric(rng.random((500, 20))) == "euclidean"  # dense features
    assert choose_metric(np.abs(rng.normal(size=(500, 20))) * (rng.random((500, 20)) < 0.3)) \
        == "euclidean"  # 30 % filled: an image-like view, not text
    half_empty = counts.toarray()
    half_empty[::2] = 0  # missing rows do not make a view sparse
    dense_rows = rng.random((500, 300))
    dense_rows[::2] = 0
    assert choose_metric(half_empty) == "cosine" and choose_metric(dense_rows) == "euclidean"
    assert resolve_metrics([counts, dense_rows], "auto") == ("cosine", "euclidean")
    assert resolve_metrics([counts, dense_rows], ["euclidean", "auto"]) == \
        ("euclidean", "euclidean")


def _histograms(seed: int, n: int = 400, k: int = 4, bins: int = 40, heavy: int = 3,
                heavy_mass: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
    """Rows that sum to 1: ``heavy_mass`` spread at random over ``heavy`` bins that say
    nothing of the class, the rest over the other bins, most of it on the class's own."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k), n // k)
    X = np.zeros((n, bins))
    X[:, :heavy] = heavy_mass * rng.dirichlet(np.ones(heavy), n)
    light = bins - heavy
    alpha = np.full((k, light), 0.05)
    for c in range(k):
        alpha[c, c * (light // k):(c + 1) * (light // k)] = 2.0
    for i in range(n):
        X[i, heavy:] = (1 - heavy_mass) * rng.dirichlet(alpha[y[i]])
    return X, y


def test_metric_rule_picks_hellinger_for_compositional_views_in_the_best_mode(monkeypatch):
    from fastmice import _best

    X, _ = _histograms(0)
    assert choose_metric(X, "best") == "hellinger"
    assert choose_metric(X.astype(np.float32), "best") == "hellinger"  # rounded sums
    assert choose_metric(X) == choose_metric(X, "paper") == "euclidean"  # the paper's
    with_empty = X.copy()
    with_empty[::5] = 0  # missing rows: judged by the rows it has
    assert choose_metric(with_empty, "best") == "hellinger"
    counts = np.random.default_rng(0).poisson(3.0, size=(400, 40)).astype(float)
    assert choose_metric(counts, "best") == "euclidean"  # row sums vary: not compositional
    assert is_compositional(X) and is_compositional(sp.csr_matrix(with_empty))
    assert not is_compositional(counts) and not is_compositional(X - 0.01)
    assert choose_metric(X - 0.01, "best") == "euclidean"  # negative values
    sparse_topics = sp.random(400, 300, density=0.02, random_state=0, format="csr")
    sparse_topics = sp.csr_matrix(sp.diags(1 / np.maximum(sparse_topics.sum(axis=1).A1, 1e-12))
                                  @ sparse_topics)
    assert choose_metric(sparse_topics, "best") == "cosine"  # sparse comes first
    assert resolve_metrics([X, counts], "auto", "best") == ("hellinger", "euclidean")
    assert resolve_metrics([X, counts], "auto") == ("euclidean", "euclidean")
    with pytest.raises(ValueError, match="View 1 has negative values"):
        resolve_metrics([X, X - 0.01], "hellinger")
    monkeypatch.setattr(_best, "CHOICES", _best.BestChoices(hellinger=False))
    assert choose_metric(X, "best") == "euclidean"


def test_hellinger_separates_histograms_that_the_euclidean_distance_cannot(monkeypatch):
    """A few heavy bins that vary at random decide every euclidean distance; the class is in
    the light bins, which the square roots bring forward (measured: NMI 1.0 against
    0.00-0.04 with the euclidean distance, seeds 0-2)."""
    from fastmice import _best

    scores = {}
    for hellinger in (True, False):
        monkeypatch.setattr(_best, "CHOICES", _best.BestChoices(hellinger=hellinger))
        scores[hellinger] = []
        for seed in range(2):
            X, y = _histograms(seed)
            model = FastMICE(4, mode="best", random_state=seed, **SMALL).fit([X])
            assert model.metrics_ == (("hellinger",) if hellinger else ("euclidean",))
            scores[hellinger].append(_nmi(y, model.labels_))
            if hellinger:  # new samples are placed through the same square roots
                np.testing.assert_array_equal(model.predict([X]), model.labels_)
    assert min(scores[True]) > 0.95
    assert max(scores[False]) < 0.5
    X, y = _histograms(0)
    X[X < 0.005] = 0
    stored = sp.csr_matrix(X)
    before = stored.data.copy()
    paper = FastMICE(4, metric="hellinger", random_state=0, **SMALL).fit([X])
    assert paper.metrics_ == ("hellinger",) and _nmi(y, paper.labels_) > 0.9
    sparse = FastMICE(4, metric="hellinger", random_state=0, **SMALL).fit([stored])
    np.testing.assert_array_equal(sparse.labels_, paper.labels_)  # same square roots
    np.testing.assert_array_equal(stored.data, before)  # the view itself is left alone


def test_auto_metric_in_paper_mode_equals_the_resolved_metrics(make_blobs):
    Xs, y = make_blobs()
    rng = np.random.default_rng(1)
    words = 100 * y[:, None] + rng.integers(0, 100, size=(300, 4))  # 4 words of its topic
    text = sp.csr_matrix((np.ones(1200), words.ravel(), np.arange(0, 1201, 4)),
                         shape=(300, 300))
    views = [Xs[0], text]
    auto = FastMICE(3, metric="auto", random_state=0, **SMALL).fit(views)
    assert auto.metrics_ == ("euclidean", "cosine")
    explicit = FastMICE(3, metric=["euclidean", "cosine"], random_state=0, **SMALL).fit(views)
    np.testing.assert_array_equal(auto.labels_, explicit.labels_)
    assert FastMICE(3, random_state=0, **SMALL).fit(views).metrics_ == ("euclidean",) * 2
    assert FastMICE(3, mode="best", random_state=0, **SMALL).fit(views).metrics_ == \
        ("euclidean", "cosine")


def test_mode_is_checked_and_paper_is_the_library_default(small_views):
    with pytest.raises(ValueError, match="Unknown mode 'fast'"):
        EnsembleParams(3, mode="fast")
    Xs, _ = small_views
    default = FastMICE(3, random_state=0, **SMALL).fit(Xs)
    paper = FastMICE(3, mode="paper", metric="euclidean", random_state=0, **SMALL).fit(Xs)
    np.testing.assert_array_equal(default.base_labels_, paper.base_labels_)
    np.testing.assert_array_equal(default.labels_, paper.labels_)
    assert default.consensus_.member_weights is None


def test_best_mode_is_deterministic_and_predicts_its_own_labels(small_views):
    Xs, y = small_views
    first = FastMICE(3, mode="best", random_state=4, n_jobs=2, **SMALL).fit(Xs)
    again = FastMICE(3, mode="best", random_state=4, **SMALL).fit(Xs)
    np.testing.assert_array_equal(first.labels_, again.labels_)
    assert _nmi(y, first.labels_) == 1.0
    assert np.mean(first.predict(Xs) == first.labels_) == 1.0
    assert first.consensus_.member_weights.shape == (6,)
    assert first.consensus_.joint.labels_.shape == (len(y),)


def test_empty_rows_are_missing_and_uninformed_samples_skip_a_base_clustering(make_blobs):
    Xs, y = make_blobs(n_samples=300)
    Xs[1][:90] = 0.0  # view 1 is missing for the first 90 samples
    mask = empty_rows(Xs[1])
    assert mask.sum() == 90 and mask[:90].all()
    assert empty_rows(sp.csr_matrix(Xs[1])).sum() == 90
    model = FastMICE(3, mode="best", random_state=1, n_groups=12, n_anchors=50).fit(Xs)
    for spec, labels in zip(model.view_groups_, model.base_labels_.T, strict=True):
        expected = mask if spec.views == (1,) else np.zeros(300, bool)
        np.testing.assert_array_equal(labels == -1, expected)
    assert any(spec.views == (1,) for spec in model.view_groups_)
    assert _nmi(y, model.labels_) == 1.0


def test_informed_labels_and_weighted_incidence():
    B = sp.csr_matrix(np.array([[0.6, 0.8], [1e-16, 1e-16], [1.0, 0.0]]))
    np.testing.assert_array_equal(informed_labels(B, np.array([1, 0, 2])), [1, -1, 2])
    base = np.array([[0, 1], [-1, 0], [1, 1]])
    incidence = weighted_incidence(base, np.array([0, 2]), 4, np.array([2.0, 0.5])).toarray()
    np.testing.assert_array_equal(incidence, [[2, 0, 0, 0.5], [0, 0, 0.5, 0], [0, 2, 0, 0.5]])


def test_agreement_weights_discount_a_degenerate_base_clustering():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(4), 100)
    good = [np.where(rng.random(400) < 0.9, truth, rng.integers(0, 4, 400)) for _ in range(4)]
    giant = np.zeros(400, np.int64)
    giant[rng.choice(400, 5, replace=False)] = np.arange(1, 6)  # one cluster + singletons
    base = np.column_stack([*good, giant])
    for weighting in ("agreement", "entropy"):
        weights = agreement_weights(base, weighting)
        assert weights.mean() == pytest.approx(1.0)
        assert weights[-1] < 0.3 * weights[:-1].min()
    np.testing.assert_array_equal(agreement_weights(base, "none"), np.ones(5))
    consensus = consensus_partition(base, 4, seed=0, mode="best")
    assert _nmi(truth, consensus.labels_) > 0.9
    with pytest.raises(ValueError, match="non-negative"):
        consensus_partition(np.column_stack([*good, giant - 1]), 4, seed=0)


def test_words_and_citations_best_mode_keeps_the_word_views_clusters():
    """Issue: a word view that alone separates 5 classes, plus two copies of a citation view
    with 60 % empty rows. The best mode loses at most 2 NMI points against the word view
    alone; the paper mode, with its defaults, loses more than 10 (measured: 0.956 alone,
    0.973 best, 0.805 paper, over seeds 0-2)."""
    Xs, y = make_words_and_citations(random_state=0)
    assert (np.diff(Xs[1].indptr) == 0).mean() == pytest.approx(0.6, abs=0.05)
    seeds = range(3)
    alone = np.mean([_nmi(y, FastMICE(5, mode="best", random_state=s).fit_predict(Xs[:1]))
                     for s in seeds])
    best = np.mean([_nmi(y, FastMICE(5, mode="best", random_state=s).fit_predict(Xs))
                    for s in seeds])
    paper = np.mean([_nmi(y, FastMICE(5, random_state=s).fit_predict(Xs)) for s in seeds])
    assert alone > 0.9
    assert best >= alone - 0.02
    assert paper < alone - 0.10
    # The best mode's handling of empty rows holds even under the paper's euclidean metric.
    forced = np.mean([_nmi(y, FastMICE(5, mode="best", metric="euclidean", random_state=s)
                           .fit_predict(Xs)) for s in seeds])
    assert forced >= alone - 0.02


def test_groups_that_see_every_view_follow_the_choices(monkeypatch):
    from fastmice import _best, draw_view_groups

    dense = EnsembleParams(3, n_groups=8, random_state=0, mode="best",
                           metric="euclidean").for_data(100, 3)
    paper_draw = draw_view_groups([4, 5, 6], 100, dense, seed=1)
    assert any(len(s.views) < 3 for s in paper_draw)  # the default: the paper's draw
    monkeypatch.setattr(_best, "CHOICES", _best.BestChoices(all_view_groups_euclidean=0.5))
    half = draw_view_groups([4, 5, 6], 100, dense, seed=1)
    assert [s.views == (0, 1, 2) for s in half][1::2] == [True] * 4
    assert [s.n_base_clusters for s in half] == [s.n_base_clusters for s in paper_draw]
    text = EnsembleParams(3, n_groups=8, random_state=0, mode="best",
                          metric=["euclidean", "cosine", "euclidean"]).for_data(100, 3)
    assert [s.views for s in draw_view_groups([4, 5, 6], 100, text, seed=1)] == \
        [s.views for s in paper_draw]  # a cosine view: the share for any data (0) applies


def test_the_best_mode_applies_at_any_size_unless_limited(monkeypatch):
    from fastmice import _best

    large = EnsembleParams(3, mode="best").for_data(10**6, 2)
    assert (large.mode, large.metric) == ("best", ("auto", "auto"))
    monkeypatch.setattr(_best, "CHOICES", _best.BestChoices(max_samples=1000))
    limited = EnsembleParams(3, mode="best").for_data(1001, 2)
    assert (limited.mode, limited.metric) == ("paper", ("auto", "auto"))  # metric rule kept
    assert limited.for_data(1001, 2) == limited
    assert EnsembleParams(3, mode="best").for_data(1000, 2).mode == "best"


def test_centrality_weighs_the_larger_camp_of_base_clusterings_more():
    """Where the views split the base clusterings into two camps that share nothing (an
    informative view and one whose own groups follow another structure, as Wikipedia's image
    view), the leading eigenvector of the agreement matrix leaves the smaller camp far less
    weight than the mean agreement does."""
    rng = np.random.default_rng(0)
    truth, other = rng.integers(0, 6, 600), rng.integers(0, 6, 600)
    camp = [np.where(rng.random(600) < 0.7, truth, rng.integers(0, 6, 600)) for _ in range(12)]
    rival = [np.where(rng.random(600) < 0.7, other, rng.integers(0, 6, 600)) for _ in range(8)]
    base = np.column_stack([*camp, *rival])
    mean = agreement_weights(base, "agreement")
    central = agreement_weights(base, "agreement", centrality=True)
    assert central.mean() == pytest.approx(1.0)
    assert mean[12:].mean() / mean[:12].mean() > 0.5
    assert central[12:].mean() / central[:12].mean() < 0.2
    assert _nmi(truth, consensus_partition(base, 6, seed=0, mode="best").labels_) > 0.9
    # Without any agreement the centrality is the mean agreement (every weight 1).
    independent = np.column_stack([np.arange(600) % 2, np.arange(600) // 300])
    np.testing.assert_array_equal(agreement_weights(independent, "agreement", centrality=True),
                                  np.ones(2))


def test_agreement_weights_have_a_knee_above_the_proportional_size():
    from fastmice import _best

    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(4), 100)
    base = np.column_stack([np.where(rng.random(400) < p, truth, rng.integers(0, 4, 400))
                            for p in (0.95, 0.9, 0.8, 0.7, 0.05)])
    proportional = agreement_weights(base, "agreement")
    assert np.all(np.diff(proportional[:4]) < 0)  # in proportion to agreement
    kneed = agreement_weights(base, "agreement", agreement_knee=0.5)
    assert kneed[:4] == pytest.approx(np.full(4, kneed[0]))  # the typical ones count alike
    assert kneed[4] < 0.3 * kneed[0]  # the one that shares nothing still counts little
    limit = _best.CHOICES.proportional_max_samples
    assert _best.agreement_knee(limit) == 0.0
    assert _best.agreement_knee(limit + 1) == _best.CHOICES.agreement_knee > 0


def test_near_degenerate_base_clusterings_that_agree_do_not_cut_the_consensus(monkeypatch):
    """WebKB's failure under cosine: many view groups isolate the same few samples (one giant
    cluster and near-singletons), agree with one another more than the informative groups
    do, and under agreement weights alone the consensus splits those samples off."""
    from fastmice import _best

    rng = np.random.default_rng(0)
    truth = (rng.random(600) < 0.22).astype(np.int64)  # a 78 % majority class
    informative = [np.where(rng.random(600) < 0.9, truth, rng.integers(0, 2, 600))
                   for _ in range(8)]
    pool = rng.choice(600, 16, replace=False)
    degenerate = []
    for _ in range(12):
        labels = np.zeros(600, np.int64)
        labels[rng.choice(pool, 12, replace=False)] = rng.integers(1, 3, 12)
        degenerate.append(labels)
    base = np.column_stack([*informative, *degenerate])
    by_agreement = agreement_weights(base, "agreement")
    assert by_agreement[8:].min() > by_agreement[:8].max()  # the trap
    weights = agreement_weights(base, "agreement_entropy")
    assert weights[8:].max() < 0.5 * weights[:8].min()
    assert _best.CHOICES.weighting == "agreement_entropy"
    assert _nmi(truth, consensus_partition(base, 2, seed=0, mode="best").labels_) > 0.9
    # Under Tcut's k eigenvectors agreement weights alone fall into the trap. (The wider
    # consensus embeddings escape it here on their own: NMI 1.0 with agreement weights.)
    tcut_widths = {"extra_vectors": 0, "consensus_vectors": 1.0}
    monkeypatch.setattr(_best, "CHOICES", _best.BestChoices(**tcut_widths))
    assert _nmi(truth, consensus_partition(base, 2, seed=0, mode="best").labels_) > 0.9
    monkeypatch.setattr(_best, "CHOICES", _best.BestChoices(weighting="agreement",
                                                            **tcut_widths))
    assert _nmi(truth, consensus_partition(base, 2, seed=0, mode="best").labels_) < 0.1


def test_base_clusterings_draw_up_to_sqrt_n_clusters_in_the_best_mode(monkeypatch):
    from fastmice import _best, draw_view_groups
    from fastmice._best import base_k_range

    assert base_k_range(2, 4, 1051, "best") == (2, 32)  # floor(sqrt(1051))
    assert base_k_range(2, 4, 1051, "paper") == (2, 4)
    assert base_k_range(100, 200, 1600, "best") == (100, 200)  # 2 k is already more
    assert base_k_range(10, 20, 40_000, "best") == (10, 50)  # at most 50
    assert base_k_range(2, 4, 3, "best") == (2, 4)
    params = {"n_groups": 40, "random_state": 0, "metric": "euclidean"}
    best = EnsembleParams(2, mode="best", **params).for_data(900, 2)
    paper = EnsembleParams(2, **params).for_data(900, 2)
    best_k = [s.n_base_clusters for s in draw_view_groups([4, 5], 900, best, seed=1)]
    paper_k = [s.n_base_clusters for s in draw_view_groups([4, 5], 900, paper, seed=1)]
    assert set(paper_k) <= {2, 3, 4} and min(best_k) >= 2 and max(best_k) <= 30
    assert np.mean(best_k) > 10
    monkeypatch.setattr(_best, "CHOICES", _best.BestChoices(base_k_cap=0))
    assert [s.n_base_clusters for s in draw_view_groups([4, 5], 900, best, seed=1)] == paper_k


def _split_and_weak_pair(seed: int, n_per_class: int = 100, members: int = 20):
    """Base labels of 5 classes: every base clustering splits class 0 in the same two
    halves, and 1 in 5 merges classes 1 and 2 (plus 10 % noise)."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(5), n_per_class)
    half = rng.random(truth.size) < 0.5
    columns = []
    for _ in range(members):
        labels = 2 * truth
        labels[(truth == 0) & half] = 1
        if rng.random() > 0.8:
            labels[truth == 2] = 2
        noisy = rng.random(truth.size) < 0.1
        labels[noisy] = rng.integers(0, 10, noisy.sum())
        columns.append(np.unique(labels, return_inverse=True)[1])
    return truth, np.column_stack(columns)


def test_the_consensus_embeddings_have_room_for_a_weakly_separated_pair(monkeypatch):
    """With Tcut's k eigenvectors the consensus spends one on the split every base clustering
    makes and merges the pair that most of them separate (NMI 0.83 on every seed); the best
    mode's wider embeddings (k + 1 and 1.5 k eigenvectors) leave the k-means room for it."""
    from fastmice import _best
    from fastmice._best import consensus_widths

    assert (_best.CHOICES.extra_vectors, _best.CHOICES.consensus_vectors) == (1, 1.5)
    assert [consensus_widths(k, 1000) for k in (2, 5, 10, 100)] == \
        [[3], [6, 8], [11, 15], [101, 150]]
    assert consensus_widths(10, 12) == [11, 12] and consensus_widths(2, 2) == [2]
    seeds = range(4)
    data = [_split_and_weak_pair(seed) for seed in seeds]
    wide = [consensus_partition(base, 5, seed=seed, mode="best") for seed, (_, base)
            in zip(seeds, data, strict=True)]
    assert {c.partition.anchor_embedding.shape[1] for c in wide} <= {6, 8}
    # the fitted consensus still places its own samples where it put them
    assert (wide[0].predict(data[0][1]) == wide[0].labels_).all()
    assert np.mean([_nmi(t, c.labels_) for (t, _), c in zip(data, wide, strict=True)]) > 0.9
    monkeypatch.setattr(_best, "CHOICES", _best.BestChoices(extra_vectors=0,
                                                            consensus_vectors=1.0))
    narrow = [_nmi(t, consensus_partition(base, 5, seed=seed, mode="best").labels_)
              for seed, (t, base) in zip(seeds, data, strict=True)]
    assert max(narrow) < 0.85


def test_the_metric_rule_leaves_a_sparse_view_as_it_is():
    X = sp.csr_matrix((np.array([1.0, 0.0, 2.0, 0.0]), np.array([0, 1, 2, 0]),
                       np.array([0, 2, 3, 4])), shape=(3, 40))  # explicit zeros kept
    before = [a.copy() for a in (X.data, X.indices, X.indptr)]
    assert choose_metric(X, "best") == "cosine"  # one value in 40 per filled row
    assert all(np.array_equal(a, b) for a, b in zip(before, (X.data, X.indices, X.indptr),
                                                    strict=True))


def test_heavy_cuts_make_one_consensus_cut_and_a_short_joint_k_means():
    """Where n k^2 is large (k = 400 at 20,000 samples) the six cuts and the joint
    candidate's three long k-means cost 4-5x the paper mode's fit: one cut of width k that
    starts once from k-means++ (as on many samples), one short joint k-means; the sizes
    measured for quality keep theirs."""
    from fastmice._best import consensus_cuts, heavy_cuts

    assert consensus_cuts(400, 20_000) == ([400], "k-means++")
    assert consensus_cuts(400, 3_000) == ([401, 600] * 3 + [400] * 3, "random")  # not heavy
    assert consensus_cuts(200, 5_000) == ([201, 300] * 3 + [200] * 3, "random")  # 2e8
    assert consensus_cuts(10, 200_000) == ([10], "k-means++")
    assert heavy_cuts(400, 20_000) and not heavy_cuts(100, 10_000)
    from fastmice import _joint

    calls = []
    original = _joint.joint_kmeans

    def recording(Z, n_clusters, seeds, n_jobs, max_iter, subsample_start=False):
        calls.append((len(seeds), max_iter, subsample_start))
        return original(Z, n_clusters, seeds, n_jobs, max_iter, subsample_start)

    rng = np.random.default_rng(0)
    Xs = [rng.standard_normal((3_000, 4)), rng.standard_normal((3_000, 3))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_joint, "joint_kmeans", recording)
        for k in (410, 40):  # 3,000 x 410^2 > 5e8: heavy; 3,000 x 40^2: not
            _joint.joint_ensemble(Xs, ["euclidean"] * 2, k, seed=0, n_members=0,
                                  member_k=(k, 2 * k), feature_ratio=(0.2, 0.8))
    assert calls == [(1, _joint.JOINT_SAMPLED_ROUNDS, True),
                     (_joint.JOINT_N_INIT, _joint.JOINT_MAX_ITER, False)]


def test_narrow_cuts_come_after_the_wider_ones_and_must_agree_better_by_the_margin(
        monkeypatch):
    from fastmice import _best, _best_consensus

    assert _best.CHOICES.narrow_cuts == 0.01
    assert _best.consensus_cuts(10, 2_000) == ([11, 15] * 3 + [10] * 3, "random")
    assert _best.consensus_cuts(10, 200_000) == ([10], "k-means++")  # k is the only width
    rng = np.random.default_rng(0)
    base = np.column_stack([rng.integers(0, 6, 600) for _ in range(8)])
    for narrow_gain, kept_width in ((0.005, 6), (0.02, 4)):
        scores = iter([0.30, 0.31, 0.30, 0.305, 0.30, 0.30] + [0.31 + narrow_gain] * 3)
        monkeypatch.setattr(_best_consensus._best, "weighted_agreement",
                            lambda *args, scores=scores: next(scores))
        partition = _best_consensus.best_consensus(base, 4, 0, 5, 1, 1, sample=None,
                                                   kmeans_sample=None, full_rounds=1)[0]
        assert partition.anchor_embedding.shape[1] == kept_width  # 6 = ceil(1.5 k)


def test_narrow_cuts_keep_a_skewed_relation_set_level_with_the_paper_mode(monkeypatch):
    """A keyword view beside two relation views, clusters of sizes 100:1 (a point of the
    relation design part): on the wider consensus embeddings alone the best mode falls 10
    points below the paper mode (NMI 0.535 against 0.633); the cuts of Tcut's width k agree
    better with the members by more than the margin and give 0.872."""
    import dataclasses

    from benchmark_loader import load_benchmark

    from fastmice import _best

    families = load_benchmark("families")
    point = families.relation_point(3000, 4, 0.125, ((2, 0.9), (100, 0.33)), "skewed",
                                    seed=506)
    Xs, y = families.make_point(point)
    paper = _nmi(y, FastMICE(4, mode="paper", metric="auto", random_state=1).fit_predict(Xs))
    best = _nmi(y, FastMICE(4, mode="best", metric="auto", random_state=1).fit_predict(Xs))
    monkeypatch.setattr(_best, "CHOICES", dataclasses.replace(_best.CHOICES,
                                                              narrow_cuts=None))
    wide = _nmi(y, FastMICE(4, mode="best", metric="auto", random_state=1).fit_predict(Xs))
    assert wide < paper - 0.05
    assert best >= paper - 0.01
