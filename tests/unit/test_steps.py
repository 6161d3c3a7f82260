"""Each step function on small cases: specs, anchor search, graphs, Tcut, consensus."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score
from sklearn.neighbors import NearestNeighbors

from fastmice import (
    BipartitePartition,
    ConsensusPartition,
    EnsembleParams,
    GroupAnchors,
    ViewGroupSpec,
    build_group_graph,
    cluster_group,
    consensus_partition,
    draw_view_groups,
    partition_bipartite_graph,
    transform_group_graph,
)
from fastmice._anchors import fit_anchor_index, search_nearest_anchors


def test_specs_follow_the_official_draws():
    specs = draw_view_groups([10, 20, 30], 500, EnsembleParams(4, n_groups=50), seed=7)
    for spec in specs:
        size = len(spec.views)
        assert 1 <= size <= 3 and len(set(spec.views)) == size
        assert 4 <= spec.n_base_clusters <= 8
        assert spec.n_anchors == -(-500 // size)  # ceil(min(p, N) / |G|), p capped at N
        assert spec.n_neighbors == -(-5 // size)
        for v, features in zip(spec.views, spec.feature_indices, strict=True):
            d = [10, 20, 30][v]
            assert list(features) == sorted(set(features))
            assert np.ceil(0.2 * d) <= len(features) <= np.ceil(0.8 * d)
    assert {len(s.views) for s in specs} == {1, 2, 3}


def test_specs_are_prefix_stable_and_serialisable():
    first = draw_view_groups([10, 20], 500, EnsembleParams(4, n_groups=5), seed=3)
    more = draw_view_groups([10, 20], 500, EnsembleParams(4, n_groups=8), seed=3)
    extra = draw_view_groups([10, 20], 500, EnsembleParams(4, n_groups=3), seed=3, start=5)
    assert more[:5] == first and more[5:] == extra
    assert len({s.seed for s in more}) == 8
    record = json.loads(json.dumps(first[0].to_dict()))
    assert ViewGroupSpec.from_dict(record) == first[0]
    assert draw_view_groups([10, 20], 500, EnsembleParams(4, n_groups=5), seed=4) != first


def test_approximate_search_finds_most_true_neighbours():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 8))
    index = fit_anchor_index(X, 100, 5, cosine=False, rng=np.random.default_rng(1))
    indices, distances = search_nearest_anchors(X, index, 5)
    exact = NearestNeighbors(n_neighbors=5).fit(index.anchors).kneighbors(X)[1]
    recall = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(indices, exact, strict=True)])
    assert recall >= 0.8
    assert (np.diff(distances, axis=1) >= 0).all()  # nearest first
    np.testing.assert_allclose(
        distances, np.linalg.norm(X[:, None, :] - index.anchors[indices], axis=2), atol=1e-6)


def test_cosine_anchor_of_a_cluster_emptied_by_the_repair_is_zero_not_a_hub():
    # With nearly as many anchors as candidate rows, the empty-cluster repair can empty a
    # cluster again; the official code turns its centre into a NaN anchor at distance 0 from
    # every row (a hub). Ours is a zero anchor: similarity 0 to every row.
    for seed in range(20):
        X = sp.random(150, 400, density=0.02, random_state=seed, format="csr")
        X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
        index = fit_anchor_index(X, 120, 5, cosine=True, rng=np.random.default_rng(seed))
        zero_anchors = np.flatnonzero(~index.anchors.any(axis=1))
        if zero_anchors.size:
            break
    assert zero_anchors.size, "no seed in 0..19 produced an emptied cluster"
    assert np.isfinite(index.anchors).all() and np.isfinite(index.rep_centers).all()
    indices, distances = search_nearest_anchors(X, index, 5)
    assert np.isfinite(distances).all() and (distances <= 1).all()
    at_zero_anchor = distances[np.isin(indices, zero_anchors)]
    np.testing.assert_array_equal(at_zero_anchor, 1.0)  # never closer than a disjoint anchor

def test_graph_rows_are_unit_norm_per_member_and_transform_reproduces_them(make_blobs):
    Xs, _ = make_blobs(n_samples=400, dims=(6, 9, 4))
    spec = draw_view_groups([6, 9, 4], 400, EnsembleParams(3, n_groups=10, n_anchors=60), seed=1)[0]
    B, anchors = build_group_graph(Xs, spec)
    assert B.shape == (400, anchors.n_columns) == (400, spec.n_anchors * len(spec.views))
    start = 0
    for member in anchors.members:
        block = B[:, start:start + len(member.anchors)]
        start += len(member.anchors)
        assert (np.diff(block.indptr) == spec.n_neighbors).all()
        np.testing.assert_allclose(sp.linalg.norm(block, axis=1), 1.0, atol=1e-12)
    rebuilt = GroupAnchors.from_arrays(anchors.to_arrays())
    assert abs(transform_group_graph(Xs, spec, rebuilt) - B).max() == 0
    halves = sp.vstack([transform_group_graph([X[:150] for X in Xs], spec, rebuilt),
                        transform_group_graph([X[150:] for X in Xs], spec, rebuilt)])
    assert abs(halves - B).max() < 1e-12


def test_gaussian_weights_use_the_mean_neighbour_distance():
    X = np.arange(12, dtype=float).reshape(-1, 1)
    spec = ViewGroupSpec(0, 5, (0,), ((0,),), ("euclidean",), n_anchors=12, n_neighbors=2,
                         n_base_clusters=2)
    B, anchors = build_group_graph([X], spec)
    row = B[0].toarray().ravel()
    order = np.argsort(np.abs(anchors.members[0].anchors[:, 0] - X[0, 0]))[:2]
    d = np.abs(anchors.members[0].anchors[order, 0] - X[0, 0])
    w = np.exp(-d**2 / (2 * anchors.sigmas[0] ** 2))
    np.testing.assert_allclose(row[order], w / (np.linalg.norm(w) + np.finfo(float).eps))


def test_tcut_separates_two_components_and_predicts():
    # Two disconnected blocks: rows 0-4 link anchors 0-2, rows 5-9 link anchors 3-5.
    rng = np.random.default_rng(0)
    B = np.zeros((10, 6))
    B[:5, :3] = rng.random((5, 3)) + 0.1
    B[5:, 3:] = rng.random((5, 3)) + 0.1
    partition = partition_bipartite_graph(sp.csr_matrix(B), 2, seed=0)
    assert adjusted_rand_score([0] * 5 + [1] * 5, partition.labels_) == 1
    np.testing.assert_array_equal(partition.predict(sp.csr_matrix(B)), partition.labels_)
    again = BipartitePartition.from_arrays(partition.to_arrays())
    np.testing.assert_array_equal(again.predict(sp.csr_matrix(B[[0, 9]])),
                                  partition.labels_[[0, 9]])


def test_cuts_of_one_graph_share_an_eigen_step_only_when_it_draws_nothing():
    rng = np.random.default_rng(1)
    B = sp.csr_matrix(rng.random((300, 40)) * (rng.random((300, 40)) < 0.2))
    cache: dict = {}
    for width, seed in ((5, 0), (7, 1), (5, 2), (7, 3)):
        cached = partition_bipartite_graph(B, 4, seed=seed, n_vectors=width, eigen_cache=cache)
        fresh = partition_bipartite_graph(B, 4, seed=seed, n_vectors=width)
        np.testing.assert_array_equal(cached.labels_, fresh.labels_)
        np.testing.assert_array_equal(cached.anchor_embedding, fresh.anchor_embedding)
    assert sorted(k[0] for k in cache) == [5, 7]
    sampled: dict = {}  # the eigen step of a sample: the sample is drawn, nothing is kept
    partition_bipartite_graph(B, 4, seed=0, n_vectors=5, sample_size=200, eigen_cache=sampled)
    assert sampled == {}


def test_cuts_of_several_widths_share_the_widest_eigen_step(monkeypatch):
    from fastmice import _tcut
    rng = np.random.default_rng(1)
    B = sp.csr_matrix(rng.random((300, 40)) * (rng.random((300, 40)) < 0.2))
    solved = []
    solve = _tcut.column_graph_eigenvectors
    monkeypatch.setattr(_tcut, "column_graph_eigenvectors",
                        lambda B, k, **kw: solved.append(k) or solve(B, k, **kw))
    cache: dict = {}
    for width, seed in ((5, 0), (7, 1), (5, 2)):
        cached = partition_bipartite_graph(B, 4, seed=seed, n_vectors=width, eigen_cache=cache,
                                           solve_vectors=7)
        cached_solves, solved[:] = list(solved), []
        fresh = partition_bipartite_graph(B, 4, seed=seed, n_vectors=width)
        assert cached.anchor_embedding.shape == (40, width)
        # The leading vectors of a wider solve span the same space (signs may differ).
        np.testing.assert_allclose(np.abs(cached.anchor_embedding),
                                   np.abs(fresh.anchor_embedding), atol=1e-8)
        np.testing.assert_array_equal(cached.labels_, fresh.labels_)
        assert cached_solves == ([7] if seed == 0 else [])  # solved once, at the widest
        solved.clear()


def test_tcut_pads_when_fewer_columns_than_clusters():
    B = sp.csr_matrix(np.eye(4)[:, :2] + 0.01)
    assert len(set(partition_bipartite_graph(B, 3, seed=0).labels_)) == 3


def test_consensus_recovers_an_agreed_partition():
    truth = np.repeat([0, 1, 2], 20)
    rng = np.random.default_rng(0)
    base = []
    for _ in range(6):  # each member splits the truth further and relabels it
        k = rng.integers(3, 6)
        split = truth * 2 + (rng.random(60) < 0.5) * (truth < k - 3)
        base.append(rng.permutation(split.max() + 1)[split])
    base = np.column_stack(base)
    consensus = consensus_partition(base, 3, seed=0)
    assert adjusted_rand_score(truth, consensus.labels_) == 1
    again = ConsensusPartition.from_arrays(consensus.to_arrays())
    np.testing.assert_array_equal(again.predict(base), consensus.labels_)


def test_base_clustering_uses_the_spec_k_and_seed(make_blobs):
    Xs, _ = make_blobs(n_samples=200)
    spec = draw_view_groups([5, 8], 200, EnsembleParams(3, n_groups=1, n_anchors=40), seed=2)[0]
    B, _ = build_group_graph(Xs, spec)
    labels = cluster_group(B, spec).labels_
    assert len(np.unique(labels)) == spec.n_base_clusters
    np.testing.assert_array_equal(cluster_group(B, spec).labels_, labels)


@pytest.mark.parametrize("bad", [np.zeros((5, 2)) - 1, np.zeros((5,))])
def test_consensus_rejects_bad_base_labels(bad):
    with pytest.raises(ValueError, match="base_labels"):
        consensus_partition(bad.astype(int), 2, seed=0)
