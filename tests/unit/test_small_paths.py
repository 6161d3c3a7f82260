"""The small-data paths: kernel-form hybrid selection, the GIL-free eigensolver and its
fallback, the subspace iteration's LU by ``lu_factor`` (GIL-free), single-precision graph
steps. Each against the computation it replaces."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

import fastmice._lapack as lapack
from fastmice import EnsembleParams, build_group_graph, draw_view_groups
from fastmice._anchors import fit_anchor_index
from fastmice._blas import single_threaded_blas
from fastmice._eigen import _permuted_lower
from fastmice._gram import anchors_by_gram, gram_litekmeans, gram_pays, mean_operator
from fastmice._kmeans import litekmeans


def _count_rows(n_rows=160, n_features=300, n_groups=4, seed=0):
    """Sparse non-negative count rows from a few topics (text-like), and their topics."""
    rng = np.random.default_rng(seed)
    topics = rng.random((n_groups, n_features)) * (rng.random((n_groups, n_features)) < 0.1)
    y = rng.integers(0, n_groups, n_rows)
    return sp.csr_matrix(rng.poisson(topics[y] * 4).astype(np.float32)), y


@pytest.mark.parametrize("cosine", [False, True])
@pytest.mark.parametrize("n_clusters", [5, 40, 160])
def test_kernel_form_kmeans_follows_litekmeans(cosine, n_clusters):
    X, _ = _count_rows()
    metric = "cosine" if cosine else "sqeuclidean"
    labels, centers = litekmeans(X, n_clusters, metric=metric, max_iter=5,
                                 rng=np.random.default_rng(3))
    X64 = X.astype(np.float64)
    gram = (X64 @ X64.T).toarray()
    gram_labels, products = gram_litekmeans(gram, n_clusters, cosine=cosine, max_iter=5,
                                            rng=np.random.default_rng(3))
    # The same rounds from the same rows; only rounding differs (float64 Gram entries
    # against float32 products with explicit centres): at most a near-tie apart.
    assert np.mean(gram_labels == labels) >= 0.97
    if np.array_equal(gram_labels, labels):
        np.testing.assert_allclose(products, X64 @ centers.T.astype(np.float64),
                                   rtol=1e-5, atol=1e-5)


def test_kernel_form_anchors_and_their_gram_matrix():
    X, _ = _count_rows(seed=1)
    for cosine in (False, True):
        anchors, anchor_gram = anchors_by_gram(X, 60, cosine, np.random.default_rng(0))
        assert anchors.shape == (60, X.shape[1]) and anchors.dtype == np.float32
        A = anchors.astype(np.float64)
        np.testing.assert_allclose(anchor_gram, A @ A.T, rtol=1e-5, atol=1e-6)
        if cosine:
            norms = np.linalg.norm(A, axis=1)
            np.testing.assert_allclose(norms[norms > 0], 1, rtol=1e-6)


def test_kernel_form_index_matches_the_direct_one():
    X, _ = _count_rows(n_features=600, seed=2)
    assert gram_pays(X, 120)
    kernel = fit_anchor_index(X, 120, 3, False, np.random.default_rng(5))
    dense = fit_anchor_index(X.toarray(), 120, 3, False, np.random.default_rng(5))
    assert not gram_pays(X.toarray(), 120)  # dense candidates: explicit centres
    np.testing.assert_allclose(kernel.anchors, dense.anchors, rtol=1e-5, atol=1e-5)
    assert np.mean(kernel.neighborhoods == dense.neighborhoods) >= 0.99
    np.testing.assert_array_equal(kernel.rep_labels, dense.rep_labels)


def test_mean_operator_dense_and_sparse():
    labels = np.array([2, 0, 2, 2, 1, 0])
    counts = np.bincount(labels, minlength=4)  # cluster 3 empty: a zero row
    expected = np.zeros((4, 6))
    expected[labels, np.arange(6)] = 1.0 / counts[labels]
    np.testing.assert_array_equal(np.asarray(mean_operator(labels, counts)), expected)
    big = np.repeat(np.arange(30), 200)
    operator = mean_operator(big, np.bincount(big))
    assert sp.issparse(operator)
    np.testing.assert_allclose(np.asarray(operator.sum(axis=1)).ravel(), 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("n", "k"), [(50, 3), (400, 40), (300, 300)])
def test_gil_free_eigensolver_is_scipys_evr_bit_for_bit(dtype, n, k):
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n)).astype(dtype)
    A = (A + A.T) / 2
    expected = scipy.linalg.eigh(A.copy(), subset_by_index=[n - k, n - 1], driver="evr")
    with single_threaded_blas():
        values, vectors = lapack.top_eigenpairs(A.copy(), k)
        values2, vectors2 = lapack.top_eigenpairs(A.copy(), k)
    assert lapack._SYEVR, "the bundled LAPACK was not found: the fallback is in use"
    np.testing.assert_array_equal(values, values2)
    np.testing.assert_array_equal(vectors, vectors2)
    np.testing.assert_allclose(values, expected[0], rtol=1e-5, atol=1e-5)
    assert values.dtype == dtype and vectors.shape == (n, k)


def test_gil_free_eigensolver_lets_other_threads_run():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((700, 700))
    A = A + A.T
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)

    counter = threading.Thread(target=count)
    with single_threaded_blas():
        counter.start()
        ticks.clear()
        lapack.top_eigenpairs(A.copy(), 600)
        during = len(ticks)
        done.set()
    counter.join()
    # Holding the GIL, the counting thread would get at most a switch interval's worth of
    # ticks; without it, it counts the whole time (hundreds of thousands).
    assert during > 10_000


@pytest.mark.parametrize("shape", [(1, 1), (30, 30), (500, 60), (3000, 440)])
def test_subspace_lu_is_scipys_permuted_lu_bit_for_bit(shape):
    X = np.random.default_rng(shape[0]).standard_normal(shape)
    X[:, -1] = X[:, 0]  # a singular column: getrf's zero pivot is kept, as in lu's
    with single_threaded_blas():  # as in a fit (getrf's result depends on its threads)
        expected = scipy.linalg.lu(X, permute_l=True, check_finite=False)[0]
        lower = _permuted_lower(X.copy())
    np.testing.assert_array_equal(lower, expected)
    # The same memory order: the products that follow round as they did.
    assert lower.flags.c_contiguous == expected.flags.c_contiguous


def test_eigensolver_falls_back_when_mrrr_finds_too_few(monkeypatch):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((120, 120)).astype(np.float32)
    A = (A + A.T) / 2
    expected = scipy.linalg.eigh(A.astype(np.float64), subset_by_index=[117, 119])
    # MRRR returning fewer eigenpairs than asked, as it does in single precision on some
    # graphs with an eigenvalue repeated hundreds of times (seen on WebKB and Citeseer).
    monkeypatch.setattr(lapack, "_evr", lambda matrix, k: (np.zeros(1), np.zeros((120, 1))))
    values, vectors = lapack.top_eigenpairs(A.copy(), 3)
    assert vectors.shape == (120, 3) and vectors.dtype == np.float32
    np.testing.assert_allclose(values, expected[0], rtol=1e-5)
    np.testing.assert_allclose(np.abs(vectors.T @ expected[1]), np.eye(3), atol=1e-4)


def test_graph_step_is_single_precision_whatever_the_views(make_blobs):
    Xs, _ = make_blobs(n_samples=300)
    spec = draw_view_groups([X.shape[1] for X in Xs], 300, EnsembleParams(3), seed=2)[0]
    B64, anchors64 = build_group_graph(Xs, spec)
    B32, _ = build_group_graph([X.astype(np.float32) for X in Xs], spec)
    assert all(m.anchors.dtype == np.float32 for m in anchors64.members)
    assert B64.dtype == np.float64
    # float64 views are cast to float32 first: the same graph as float32 views'.
    assert (B64 != B32).nnz == 0

