"""Threads: the team's scheduling, and labels bit-identical whatever the number of threads."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

from fastmice import (
    FastMICE,
    _anchors,
    _consensus,
    _eigen,
    _estimator,
    _graphs,
    _tcut,
    record_stages,
    stage,
)
from fastmice._blas import single_threaded_blas
from fastmice._eigen import column_graph_eigenvectors
from fastmice._parallel import map_blocks, map_threads, team, team_size
from fastmice._rows import MatrixRows, TransferRows
from fastmice._synthetic import make_multiview_blobs

THREADS = (1, 2, 4, 16)


def test_map_threads_keeps_the_item_order_and_nests_in_one_team():
    seen = set()

    def inner(i):
        seen.add(threading.get_ident())
        time.sleep(0.001)
        return i * i

    def outer(i):
        return map_threads(inner, range(i, i + 5), 4)

    with team(4):
        assert team_size() == 4
        got = map_threads(outer, range(6), 4)
    assert got == [[j * j for j in range(i, i + 5)] for i in range(6)]
    assert len(seen) > 1  # the items ran in several threads
    assert team_size() == 1


def test_a_failing_item_raises_in_the_caller_and_the_team_goes_on():
    def item(i):
        if i in (3, 5):
            raise ValueError(f"item {i}")
        return i

    with team(3):
        with pytest.raises(ValueError, match="item 3"):  # the first failing item's error
            map_threads(item, range(8), 3)
        assert map_threads(lambda i: i + 1, range(4), 3) == [1, 2, 3, 4]


def test_at_once_caps_the_items_running_together():
    running, most = [0], [0]
    lock = threading.Lock()

    def item(_):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1

    with team(4):
        map_threads(item, range(12), 4, at_once=2)
    assert most[0] == 2


def test_work_done_by_helpers_counts_for_the_callers_stage():
    def busy(_):
        started = time.thread_time()
        while time.thread_time() - started < 0.02:
            pass

    with record_stages(clock="cpu") as cpu, record_stages(this_thread=True) as mine, \
            team(2), stage("outer"), stage("inner"):
        map_threads(busy, range(8), 2)
    assert cpu["outer/inner"] == pytest.approx(0.16, rel=0.3)  # every item's CPU seconds
    assert cpu["outer"] >= cpu["outer/inner"]
    assert mine["outer/inner"] >= 0.1  # helpers' time counts for the thread that asked


@pytest.mark.parametrize("cosine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_assignment_by_row_blocks_is_the_one_product(cosine, dtype):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9000, 37)).astype(dtype)
    centers = rng.standard_normal((23, 37)).astype(dtype)
    with single_threaded_blas():
        products = X @ centers.T
        if cosine:
            labels = np.argmax(products, axis=1)
        else:
            products = products * -2 + np.einsum("ij,ij->i", centers, centers)[None, :]
            labels = np.argmin(products, axis=1)
        for n_jobs in THREADS:
            got, val = MatrixRows(X, cosine, n_jobs).assign(centers)
            np.testing.assert_array_equal(got, labels)
            np.testing.assert_array_equal(val, products[np.arange(len(X)), labels])


def _transfer_rows(n_jobs):
    rng = np.random.default_rng(1)
    R = sp.random(12000, 3000, density=8 / 3000, format="csr", random_state=2)
    R = sp.csr_matrix(sp.diags(1 / np.maximum(np.asarray(R.sum(axis=1)).ravel(), 1e-12)) @ R)
    U = rng.standard_normal((3000, 40))
    return TransferRows(R, U, n_jobs=n_jobs), rng.standard_normal((60, 40))


def test_transfer_rows_give_the_same_bits_in_any_number_of_threads():
    with single_threaded_blas():
        rows, centers = _transfer_rows(1)
        labels, val = rows.assign(centers)
        sums = rows.center_sums(labels, 60)
        taken = rows.take(np.arange(0, 12000, 3))
        for n_jobs in THREADS[1:]:
            other, _ = _transfer_rows(n_jobs)
            got, got_val = other.assign(centers)
            np.testing.assert_array_equal(got, labels)
            np.testing.assert_array_equal(got_val, val)
            np.testing.assert_array_equal(other.center_sums(labels, 60), sums)
            np.testing.assert_array_equal(other.take(np.arange(0, 12000, 3)), taken)


def test_subspace_eigenvectors_are_the_same_in_any_number_of_threads():
    B = sp.random(40000, 900, density=10 / 900, format="csr", random_state=3)
    B.sort_indices()
    results = [column_graph_eigenvectors(B, 30, rng=np.random.default_rng(4), n_jobs=n,
                                         method="subspace") for n in THREADS]
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])


def test_map_blocks_splits_by_rows_whatever_the_threads():
    for n_jobs in THREADS:
        assert map_blocks(lambda rows: (rows.start, rows.stop), 5000, n_jobs, 2048) == \
            [(0, 2048), (2048, 4096), (4096, 5000)]


@pytest.fixture
def scale_paths(monkeypatch):
    """Small data through the paths of large data: implicit embeddings, sampled k-means,
    the consensus's subspace iteration on a sample."""
    monkeypatch.setattr(_tcut, "_DENSE_EMBEDDING", 2**12)
    monkeypatch.setattr(_eigen, "DENSE_MAX", 64)
    monkeypatch.setattr(_consensus, "CONSENSUS_SAMPLE", 1500)
    monkeypatch.setattr(_consensus, "CONSENSUS_KMEANS_SAMPLE", 700)
    monkeypatch.setattr(_consensus, "BASE_KMEANS_SAMPLE", 900)
    monkeypatch.setattr(_anchors, "ONE_PRODUCT_MAX", 0)  # the search by rep-cluster
    monkeypatch.setattr(_graphs, "SEARCH_BLOCK_ROWS", 1024)
    monkeypatch.setattr(_graphs, "_GATHER_ROWS", 300)


@pytest.mark.parametrize("mode", ["paper", "best"])
def test_labels_are_bit_identical_for_1_2_4_and_16_threads(scale_paths, monkeypatch, mode):
    Xs, _ = make_multiview_blobs(n_samples=3000, n_clusters=8, n_features=(12, 9, 7),
                                 random_state=0)
    fits = [FastMICE(8, n_groups=5, n_anchors=120, mode=mode, random_state=2, n_jobs=n)
            .fit(Xs) for n in THREADS]
    monkeypatch.setattr(_estimator, "GROUPS_AT_ONCE", 2)  # 4 threads, 2 groups at a time
    fits.append(FastMICE(8, n_groups=5, n_anchors=120, mode=mode, random_state=2, n_jobs=4)
                .fit(Xs))
    for fit in fits[1:]:
        np.testing.assert_array_equal(fit.base_labels_, fits[0].base_labels_)
        np.testing.assert_array_equal(fit.labels_, fits[0].labels_)
        np.testing.assert_array_equal(fit.consensus_.partition.centers,
                                      fits[0].consensus_.partition.centers)
    assert len(np.unique(fits[0].labels_)) == 8


def test_the_best_consensus_cuts_side_by_side_are_the_cuts_one_by_one():
    # Few rows: the nine cuts (wide, then narrow) run in threads, one thread each.
    from fastmice import _best_consensus, consensus_partition

    rng = np.random.default_rng(4)
    truth = rng.integers(0, 6, 1200)
    members = np.column_stack([np.where(rng.random(1200) < 0.3, rng.integers(0, 9, 1200),
                                        truth * 9 // 6 + rng.integers(0, 2, 1200))
                               for _ in range(12)])
    assert _best_consensus.CUTS_THREADED_WORK > 1200 * 6
    fits = [consensus_partition(members, 6, seed=7, n_jobs=n, mode="best") for n in THREADS]
    for fit in fits[1:]:
        np.testing.assert_array_equal(fit.labels_, fits[0].labels_)
        np.testing.assert_array_equal(fit.partition.centers, fits[0].partition.centers)
