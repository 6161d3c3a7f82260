"""The paths taken at scale, checked on small data against the exact ones they stand for.

Eigensolvers (dense / row side / subspace iteration), the implicit transfer-cut embedding
(TransferRows) against the formed one, sampled k-means, warm starts, blockwise search and
stage timings.
"""

import threading

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score

from fastmice import (
    EnsembleParams,
    _graphs,
    build_group_graph,
    cluster_group,
    consensus_partition,
    draw_view_groups,
    partition_bipartite_graph,
    record_stages,
    stage,
    transform_group_graph,
)
from fastmice import _rows as rows_module
from fastmice._eigen import column_graph_eigenvectors
from fastmice._kmeans import litekmeans, lloyd_rounds, sampled_litekmeans
from fastmice._rows import MatrixRows, TransferRows
from fastmice._tcut import _row_stochastic


def clustered_graph(n_rows=900, n_columns=300, k=6, noise=0.05, seed=0):
    """A bipartite graph whose rows and columns fall in k blocks, plus weak noise edges."""
    rng = np.random.default_rng(seed)
    row_block = rng.integers(0, k, n_rows)
    column_block = np.arange(n_columns) % k
    rows, cols, vals = [], [], []
    for i, b in enumerate(row_block):
        mine = np.flatnonzero(column_block == b)
        picked = rng.choice(mine, 5, replace=False)
        rows += [i] * 6
        cols += [*picked, rng.integers(n_columns)]
        vals += [*rng.uniform(0.5, 1.0, 5), noise]
    B = sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_columns))
    B.sum_duplicates()
    return B, row_block


def d_metric_basis(vectors, B):
    """The orthonormal eigenvectors V behind ``D^-1/2 V`` (to compare subspaces)."""
    d = np.asarray(B.sum(axis=0)).ravel()
    V = vectors * np.sqrt(np.maximum(d, np.finfo(float).eps))[:, None]
    return V / np.linalg.norm(V, axis=0)


@pytest.mark.parametrize("method", ["rows", "subspace", "lanczos"])
def test_eigensolvers_span_the_dense_eigenvectors(method):
    B, _ = clustered_graph()
    dense = d_metric_basis(column_graph_eigenvectors(B, 6, method="dense"), B)
    other = d_metric_basis(column_graph_eigenvectors(B, 6, method=method,
                                                     rng=np.random.default_rng(0)), B)
    cosines = np.linalg.svd(dense.T @ other, compute_uv=False)  # principal angles
    np.testing.assert_allclose(cosines, 1.0, atol=1e-4)


@pytest.mark.parametrize("method", ["dense", "rows"])
def test_single_precision_dense_eigenvectors_span_the_double_precision_ones(method):
    # The base clusterings' dense eigenproblems are solved in float32.
    B, _ = clustered_graph(n_rows=900 if method == "dense" else 250, n_columns=300)
    double = column_graph_eigenvectors(B, 6, method=method)
    single = column_graph_eigenvectors(B, 6, method=method, dense_dtype=np.float32)
    assert single.dtype == np.float64 and not np.array_equal(single, double)
    cosines = np.linalg.svd(d_metric_basis(double, B).T @ d_metric_basis(single, B),
                            compute_uv=False)
    np.testing.assert_allclose(cosines, 1.0, atol=1e-5)


def test_lanczos_leaves_graphs_joined_only_by_negligible_edges_to_the_dense_solver():
    # Two blocks joined by eps-weight edges: eigenvalue 1 twice, to within eps, which
    # Lanczos from one start vector may find once.
    first, _ = clustered_graph(n_rows=400, n_columns=150, k=3, seed=1)
    second, _ = clustered_graph(n_rows=400, n_columns=150, k=3, seed=2)
    B = sp.block_diag([first, second], format="lil")
    B[0, 160] = B[450, 3] = np.finfo(float).eps
    B = sp.csr_matrix(B)
    dense = column_graph_eigenvectors(B, 6, method="dense")
    np.testing.assert_array_equal(column_graph_eigenvectors(B, 6, method="lanczos"), dense)
    connected, _ = clustered_graph(n_rows=800, n_columns=300, k=6, seed=3)
    lanczos = column_graph_eigenvectors(connected, 6, method="lanczos")
    assert not np.array_equal(lanczos, column_graph_eigenvectors(connected, 6, method="dense"))


def test_subspace_products_in_threads_give_the_same_vectors(monkeypatch):
    from fastmice import _eigen

    monkeypatch.setattr(_eigen, "_PRODUCT_ROWS", 100)  # several blocks
    B, _ = clustered_graph()
    runs = [column_graph_eigenvectors(B, 6, method="subspace", rng=np.random.default_rng(3),
                                      n_jobs=n) for n in (1, 2)]
    np.testing.assert_array_equal(*runs)


def test_a_transposed_block_as_csr_gives_the_transposed_product_bit_for_bit():
    # The subspace iteration applies A_b^T as a CSR matrix formed once (a gathering
    # product) instead of the CSC view A_b.T (a scattering one): the same sums, in order.
    B, _ = clustered_graph(n_rows=2000, n_columns=700)
    A = sp.csr_matrix(B, dtype=np.float32)
    Y = np.random.default_rng(0).standard_normal((A.shape[0], 37)).astype(np.float32)
    np.testing.assert_array_equal(A.T.tocsr() @ Y, A.T @ Y)


def test_transfer_rows_match_the_formed_embedding():
    B, _ = clustered_graph()
    U = column_graph_eigenvectors(B, 6)
    R = _row_stochastic(B)
    E = np.asarray(R @ U)
    E /= np.linalg.norm(E, axis=1, keepdims=True) + 1e-10
    implicit, formed = TransferRows(R, U), MatrixRows(E, cosine=True)
    np.testing.assert_allclose(implicit.norms, np.linalg.norm(R @ U, axis=1) + 1e-10)
    np.testing.assert_allclose(implicit.take(np.arange(10)), E[:10])
    centers = E[[0, 200, 400, 600, 800, 850]]
    labels_i, val_i = implicit.assign(centers)
    labels_f, val_f = formed.assign(centers)
    np.testing.assert_array_equal(labels_i, labels_f)
    np.testing.assert_allclose(val_i, val_f, atol=1e-5)  # float32 products
    np.testing.assert_allclose(implicit.center_sums(labels_f, 6), formed.center_sums(labels_f, 6))
    # The same start gives the same k-means labels.
    same = [litekmeans(rows, 6, metric="cosine", max_iter=20, rng=np.random.default_rng(1))[0]
            for rows in (implicit, formed)]
    np.testing.assert_array_equal(*same)


def test_norms_found_while_assigning_equal_the_gram_norms():
    B, _ = clustered_graph()
    U = column_graph_eigenvectors(B, 6)
    R = _row_stochastic(B)
    gram = TransferRows(R, U)
    lazy = TransferRows(R, U)
    lazy._norms = None  # as for many columns: norms come with the first assignment
    centers = gram.take(np.array([0, 1, 2, 3, 4, 5]))
    np.testing.assert_array_equal(lazy.assign(centers)[0], gram.assign(centers)[0])
    np.testing.assert_allclose(lazy.norms, gram.norms, rtol=1e-6)


def test_sampled_kmeans_on_every_row_is_litekmeans_and_a_sample_still_finds_the_blocks():
    B, truth = clustered_graph()
    rows = TransferRows(_row_stochastic(B), column_graph_eigenvectors(B, 6))
    plain = litekmeans(rows, 6, metric="cosine", max_iter=20, rng=np.random.default_rng(2))
    same = sampled_litekmeans(rows, 6, sample=None, metric="cosine", max_iter=20,
                              rng=np.random.default_rng(2))
    np.testing.assert_array_equal(plain[0], same[0])
    sample = np.sort(np.random.default_rng(0).choice(900, 300, replace=False))
    labels, centers = sampled_litekmeans(rows, 6, sample=sample, full_rounds=2, metric="cosine",
                                         max_iter=20, n_init=3, rng=np.random.default_rng(2))
    assert len(np.unique(labels)) == 6 and centers.shape == (6, 6)
    assert adjusted_rand_score(truth, labels) > 0.95


def test_lloyd_rounds_from_converged_centres_change_nothing():
    B, _ = clustered_graph()
    rows = TransferRows(_row_stochastic(B), column_graph_eigenvectors(B, 6))
    labels, centers = litekmeans(rows, 6, metric="cosine", max_iter=100,
                                 rng=np.random.default_rng(0))
    again, _ = lloyd_rounds(rows, centers, 5)
    np.testing.assert_array_equal(again, labels)


def test_tcut_on_a_sample_agrees_with_the_whole_and_draws_no_sample_when_small():
    B, truth = clustered_graph(n_rows=3000)
    whole = partition_bipartite_graph(B, 6, max_iter=20, n_init=5, seed=0)
    unchanged = partition_bipartite_graph(B, 6, max_iter=20, n_init=5, seed=0, sample_size=3000)
    np.testing.assert_array_equal(whole.labels_, unchanged.labels_)
    sampled = partition_bipartite_graph(B, 6, max_iter=20, n_init=5, seed=0, sample_size=800,
                                        kmeans_sample_size=400, full_rounds=2)
    assert adjusted_rand_score(whole.labels_, sampled.labels_) > 0.95
    assert adjusted_rand_score(truth, sampled.labels_) > 0.95


def test_warm_start_keeps_the_partition_and_places_new_rows():
    B, truth = clustered_graph(n_rows=1200)
    old = partition_bipartite_graph(B[:1000], 6, max_iter=20, seed=0)
    rng = np.random.default_rng(5)  # a warm start draws nothing
    warm = partition_bipartite_graph(B, 6, init=old, full_rounds=2, rng=rng)
    assert rng.integers(1 << 30) == np.random.default_rng(5).integers(1 << 30)
    np.testing.assert_array_equal(warm.anchor_embedding, old.anchor_embedding)
    assert adjusted_rand_score(old.labels_, warm.labels_[:1000]) > 0.99
    assert adjusted_rand_score(truth, warm.labels_) > 0.95
    with pytest.raises(ValueError, match="columns"):
        partition_bipartite_graph(B[:, :200], 6, init=old)


def test_extended_partition_keeps_old_labels_and_predicts_new_rows():
    B, truth = clustered_graph(n_rows=1200)
    old = partition_bipartite_graph(B[:1000], 6, max_iter=20, seed=0)
    grown = old.extended(B)
    np.testing.assert_array_equal(grown.labels_[:1000], old.labels_)
    np.testing.assert_array_equal(grown.labels_[1000:], old.predict(B[1000:]))
    assert grown.centers is old.centers and grown.anchor_embedding is old.anchor_embedding
    assert adjusted_rand_score(truth, grown.labels_) > 0.95
    np.testing.assert_array_equal(old.extended(B[:1000]).labels_, old.labels_)
    with pytest.raises(ValueError, match="1000, which must come first"):
        old.extended(B[:999])


def test_cluster_group_warm_start_extends_the_groups_partition():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, 700)
    Xs = [np.eye(4)[truth] * 5 + rng.normal(size=(700, 4)) for _ in range(2)]
    params = EnsembleParams(4, n_groups=2, n_anchors=60, random_state=0)
    spec = draw_view_groups([4, 4], 600, params, seed=params.root_seed)[0]
    B_old, anchors = build_group_graph([X[:600] for X in Xs], spec)
    first = cluster_group(B_old, spec)
    B_new = transform_group_graph([X[600:] for X in Xs], spec, anchors)
    with record_stages() as seconds:
        grown = cluster_group(sp.vstack([B_old, B_new], format="csr"), spec, first)
    assert set(seconds) == {"kmeans"}  # no eigen step, nothing drawn
    np.testing.assert_array_equal(grown.labels_[:600], first.labels_)
    np.testing.assert_array_equal(grown.labels_[600:], first.predict(B_new))


def test_consensus_warm_start_refines_the_earlier_consensus():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 600)
    base = np.column_stack([(truth * 2 + rng.integers(0, 2, 600)) % 8 for _ in range(6)])
    first = consensus_partition(base[:500], 4, seed=0)
    warm = consensus_partition(base, 4, seed=0, init=first)
    assert adjusted_rand_score(truth, warm.labels_) > 0.99
    assert adjusted_rand_score(first.labels_, warm.labels_[:500]) > 0.99
    with pytest.raises(ValueError, match="other base clusterings"):
        consensus_partition(base[:, :5], 4, seed=0, init=first)


def test_search_by_blocks_equals_one_block(make_blobs, monkeypatch):
    Xs, _ = make_blobs(n_samples=700)
    spec = draw_view_groups([X.shape[1] for X in Xs], 700, EnsembleParams(3), seed=1)[0]
    whole_graph, _ = build_group_graph(Xs, spec)
    monkeypatch.setattr(_graphs, "SEARCH_BLOCK_ROWS", 128)
    monkeypatch.setattr(_graphs, "_GATHER_ROWS", 50)
    blocked_graph, _ = build_group_graph(Xs, spec)
    np.testing.assert_array_equal(whole_graph.indices, blocked_graph.indices)
    np.testing.assert_allclose(whole_graph.data, blocked_graph.data, rtol=1e-6)  # rounding


def test_stages_are_recorded_per_thread_on_request(make_blobs):
    Xs, _ = make_blobs(n_samples=300)
    spec = draw_view_groups([X.shape[1] for X in Xs], 300, EnsembleParams(3), seed=0)[0]
    with record_stages() as seconds:
        B, _ = build_group_graph(Xs, spec)
        cluster_group(B, spec)
    assert {"anchors", "search", "graph", "eigen", "kmeans"} <= set(seconds)
    seen = {}

    def other_thread():
        with stage("elsewhere"):
            pass

    with record_stages(this_thread=True) as mine:
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        with stage("here"), stage("inner"):
            seen["ok"] = True
    assert set(mine) == {"here", "here/inner"}


def test_neighbourhood_products_equal_the_plain_products(monkeypatch):
    from fastmice import _anchors

    monkeypatch.setattr(_anchors, "_OWN_PRODUCT_ROWS", 5)  # some own products, some shared
    rng = np.random.default_rng(0)
    nearest = np.sort(rng.integers(0, 6, 80))
    nearest[nearest == 3] = 4  # a member without rows
    X = rng.standard_normal((80, 9))
    candidate_rows = rng.standard_normal((6, 4, 9))
    expected = np.einsum("nd,ncd->nc", X, candidate_rows[nearest])
    got = _anchors._neighbourhood_products(X, nearest, 6, candidate_rows)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_search_in_one_product_finds_the_neighbours_of_the_search_by_rep_cluster(
        make_blobs, monkeypatch, sparse):
    from fastmice import _anchors

    Xs, _ = make_blobs(n_samples=300)
    if sparse:
        Xs = [sp.csr_matrix(X) for X in Xs]
    spec = draw_view_groups([X.shape[1] for X in Xs], 300, EnsembleParams(3), seed=2)[0]
    one_product, _ = build_group_graph(Xs, spec)
    monkeypatch.setattr(_anchors, "ONE_PRODUCT_MAX", 0)
    by_rep_cluster, _ = build_group_graph(Xs, spec)
    np.testing.assert_array_equal(one_product.indices, by_rep_cluster.indices)
    if sparse:  # the same sums in the same order
        np.testing.assert_array_equal(one_product.data, by_rep_cluster.data)
    else:  # products of other shapes: rounding
        np.testing.assert_allclose(one_product.data, by_rep_cluster.data, rtol=1e-9)


@pytest.mark.parametrize("n_rows", [200, 1000])  # below and above _rows._ADD_AT_MAX entries
@pytest.mark.parametrize("sparse", [False, True])
def test_centre_sums_add_each_clusters_rows_in_row_order(sparse, n_rows):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_rows, 30)).astype(np.float32)
    X[X < 0.5] = 0
    X = sp.csr_matrix(X) if sparse else X
    labels = rng.integers(0, 7, n_rows)
    labels[labels == 3] = 4  # an empty cluster
    indicator = sp.csr_matrix((np.ones(n_rows, np.float32), (labels, np.arange(n_rows))),
                              shape=(7, n_rows))
    expected = indicator @ X
    expected = expected.toarray() if sp.issparse(expected) else expected
    got = MatrixRows(X, cosine=False).center_sums(labels, 7)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)


def test_sparse_and_dense_views_find_the_same_neighbours(make_blobs):
    Xs, _ = make_blobs(n_samples=500)
    spec = draw_view_groups([X.shape[1] for X in Xs], 500, EnsembleParams(3), seed=4)[0]
    dense, _ = build_group_graph(Xs, spec)
    sparse, _ = build_group_graph([sp.csr_matrix(X) for X in Xs], spec)
    np.testing.assert_array_equal(dense.indices, sparse.indices)
    # Sparse candidates are clustered in kernel form (float64 Gram), dense ones with explicit
    # float32 centres: a few anchors move by rounding, and the kernel width with them.
    np.testing.assert_allclose(dense.data, sparse.data, rtol=1e-2)


@pytest.mark.parametrize("kind", ["continuous", "few_values", "mostly_equal", "some_rows"])
@pytest.mark.parametrize("m", [1, 11, 51, 200])
def test_neighbourhoods_are_the_first_columns_of_a_stable_sort(kind, m):
    from fastmice._anchors import _first_of_stable_argsort

    rng = np.random.default_rng(m)
    values = rng.random((300, 400))
    if kind == "few_values":
        values = np.round(values * 4) / 4
    elif kind == "mostly_equal":  # cosine distances of sparse rows: most are exactly 1
        values = np.where(rng.random(values.shape) < 0.95, 1.0, values)
    elif kind == "some_rows":  # ties beyond the m smallest in every third row only
        values[::3] = np.round(values[::3] * 8) / 8
    expected = np.argsort(values, axis=1, kind="stable")[:, :m]
    np.testing.assert_array_equal(_first_of_stable_argsort(values, m), expected)


class _CountingRows(MatrixRows):
    assignments = 0

    def assign(self, centers, n_jobs=1):
        _CountingRows.assignments += 1
        return super().assign(centers, n_jobs)


def test_kmeans_stops_once_the_centres_no_longer_move():
    # As many clusters as distinct rows (anchors on fewer samples than p): the first round
    # gives every row its own cluster and leaves the centres where they started.
    X = np.random.default_rng(0).standard_normal((60, 5))
    rows = _CountingRows(X, cosine=False)
    labels, centers = litekmeans(rows, 60, max_iter=5, rng=np.random.default_rng(1))
    assert _CountingRows.assignments == 1
    np.testing.assert_array_equal(labels, np.arange(60))
    np.testing.assert_array_equal(centers, X)


@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_a_sparse_product_split_by_columns_is_the_same_product(n_jobs):
    from fastmice._parallel import by_column_parts

    rng = np.random.default_rng(n_jobs)
    S = sp.random(50, 3000, density=0.3, format="csr", random_state=n_jobs)
    U = rng.standard_normal((3000, 37))
    got = by_column_parts(lambda part: np.asarray(S @ U[:, part]), U.shape[1], n_jobs)
    np.testing.assert_array_equal(got, S @ U)


def test_implicit_centre_sums_do_not_depend_on_threads():
    rng = np.random.default_rng(0)
    R = _row_stochastic(sp.random(3000, 400, density=0.02, format="csr", random_state=0))
    U = rng.standard_normal((400, 12))
    labels = rng.integers(0, 12, 3000)
    one = TransferRows(R, U, n_jobs=1).center_sums(labels, 12)
    np.testing.assert_array_equal(TransferRows(R, U, n_jobs=2).center_sums(labels, 12), one)


@pytest.mark.parametrize("n_jobs, entries", [(1, 2**20), (3, 2**20), (2, 97)])
def test_summed_rows_by_column_parts_add_in_row_order(n_jobs, entries, monkeypatch):
    """Each cluster's sum of R's rows adds the same terms in the same (row) order as one
    pass over R's rows does, whatever the column parts (threads) and chunks: bit for bit."""
    monkeypatch.setattr(rows_module, "_SUMS_ENTRIES", entries)
    rng = np.random.default_rng(5)
    R = _row_stochastic(sp.random(4000, 700, density=0.01, format="csr", random_state=5))
    U = rng.standard_normal((700, 9))
    labels = rng.integers(0, 30, 4000)
    rows = TransferRows(R, U, n_jobs=n_jobs)
    in_row_order = np.zeros(30 * 700)
    entry_rows = np.repeat(np.arange(4000), np.diff(R.indptr))
    np.add.at(in_row_order, labels[entry_rows] * 700 + R.indices,
              R.data * (1.0 / rows.norms)[entry_rows])
    np.testing.assert_array_equal(rows._summed_rows(labels, 30), in_row_order.reshape(30, 700))


@pytest.mark.parametrize("summed_densely", [True, False])
@pytest.mark.parametrize("n_clusters, per_row", [(12, 8), (300, 2)])
def test_implicit_centre_sums_match_the_formed_rows_dense_or_sparse(n_clusters, per_row,
                                                                    summed_densely,
                                                                    monkeypatch):
    # 12 clusters: a block's summed rows of R are dense (a dense product with U); 300
    # clusters on 5,000 columns: sparse (a sparse one). Both are the formed rows' sums,
    # whether R's rows are added up densely or by the cluster indicator's product.
    if not summed_densely:
        monkeypatch.setattr(rows_module, "_DENSE_SUMS_MAX", 0)
    rng = np.random.default_rng(3)
    R = _row_stochastic(sp.random(3000, 5000, density=per_row / 5000, format="csr",
                                  random_state=1))
    U = rng.standard_normal((5000, 16))
    labels = rng.integers(0, n_clusters, 3000)
    E = np.asarray(R @ U)
    E /= np.linalg.norm(E, axis=1, keepdims=True) + 1e-10
    formed = MatrixRows(E, cosine=True).center_sums(labels, n_clusters)
    one = TransferRows(R, U, n_jobs=1).center_sums(labels, n_clusters)
    np.testing.assert_allclose(one, formed, atol=1e-9)
    np.testing.assert_array_equal(TransferRows(R, U, n_jobs=3).center_sums(labels, n_clusters),
                                  one)


@pytest.mark.parametrize("sorted_indices", [True, False])
def test_scaling_a_graph_entry_by_entry_is_the_product_with_diagonals(sorted_indices):
    from fastmice._eigen import _scaled

    rng = np.random.default_rng(1)
    M = sp.random(500, 200, density=0.05, format="csr", random_state=1)
    if not sorted_indices:  # a product's output: rows not in column order
        M = M.T @ sp.csr_matrix(sp.diags(rng.random(500)) @ M)
    M.data[:3] = 0  # explicit zeros are dropped, as by the products
    rows, columns = rng.random(M.shape[0]), rng.random(M.shape[1])
    expected = sp.csr_matrix(sp.diags(rows) @ M @ sp.diags(columns))
    got = _scaled(M, rows, columns)
    for name in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    # Rows alone: the same entries (a product with one diagonal stores them in another order).
    assert (_scaled(M, rows) != sp.csr_matrix(sp.diags(rows) @ M)).nnz == 0
