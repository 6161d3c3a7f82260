"""DatasetStore: append-only multi-view datasets, fingerprints, memory-mapped loads."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from storage import ArtifactIntegrityError, ArtifactNotFoundError, RecordConflictError
from storage.datasets import DatasetStore, batch_fingerprint, dataset_fingerprint


def _batch(n, seed, features=(3, 5), sparse_view=False):
    rng = np.random.default_rng(seed)
    Xs = [rng.random((n, p)) for p in features]
    if sparse_view:
        Xs.append(sp.random(n, 7, density=0.3, format="csr", random_state=seed))
    return Xs


@pytest.fixture
def ds(local_store):
    return DatasetStore(local_store)


def test_create_append_load(ds):
    first, second = _batch(6, 0, sparse_view=True), _batch(4, 1, sparse_view=True)
    m1 = ds.create("blobs", first, labels=np.arange(6) % 2)
    assert m1["version"] == 1 and m1["n_samples"] == 6 and m1["n_views"] == 3
    assert m1["n_features"] == [3, 5, 7] and m1["view_types"] == ["dense", "dense", "sparse"]
    m2 = ds.append("blobs", second, labels=np.arange(4) % 2)
    assert m2["version"] == 2 and m2["n_samples"] == 10
    assert [b["batch_id"] for b in m2["batches"]] == [0, 1]
    assert [b["first_row"] for b in m2["batches"]] == [0, 6]
    assert ds.manifest("blobs") == m2
    assert ds.manifest("blobs", version=1) == m1  # the old manifest is kept
    assert ds.list() == ["blobs"] and ds.exists("blobs") and not ds.exists("other")

    Xs = ds.load_views("blobs")
    for v in range(2):
        assert type(Xs[v]) is np.ndarray
        np.testing.assert_array_equal(Xs[v], np.vstack([first[v], second[v]]))
    assert isinstance(Xs[2], sp.csr_matrix)
    assert (Xs[2] != sp.vstack([first[2], second[2]])).nnz == 0
    np.testing.assert_array_equal(ds.load_ids("blobs"), np.arange(10))
    assert ds.load_ids("blobs").dtype == np.int64
    np.testing.assert_array_equal(ds.load_labels("blobs"), np.r_[np.arange(6), np.arange(4)] % 2)

    only_new = ds.load_views("blobs", batches=[1])
    np.testing.assert_array_equal(only_new[0], second[0])
    np.testing.assert_array_equal(ds.load_ids("blobs", batches=1), np.arange(6, 10))
    swapped = ds.load_views("blobs", batches=[1, 0])  # in the order given
    np.testing.assert_array_equal(swapped[1], np.vstack([second[1], first[1]]))


def test_single_batch_load_is_a_memmap(ds):
    Xs = _batch(8, 0)
    ds.create("d", Xs)
    got = ds.load_views("d")
    assert all(isinstance(X, np.memmap) and not X.flags.writeable for X in got)
    assert all(X.flags.c_contiguous for X in got)
    np.testing.assert_array_equal(got[1], Xs[1])
    assert not any(isinstance(X, np.memmap) for X in ds.load_views("d", mmap=False))


def test_fortran_views_are_stored_in_c_order(ds):
    X = np.asfortranarray(np.arange(12.0).reshape(4, 3))
    ds.create("d", [X])
    [got] = ds.load_views("d")
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, X)


def test_fingerprints(ds, local_store):
    first, second = _batch(5, 0), _batch(3, 1)
    m1 = ds.create("a", first)
    m2 = ds.append("a", second)
    fp0, fp1 = (b["fingerprint"] for b in m2["batches"])
    assert fp0 == m1["batches"][0]["fingerprint"]  # appending leaves earlier batches alone
    assert fp0 == batch_fingerprint(first, np.arange(5))
    assert fp1 == batch_fingerprint(second, np.arange(5, 8))
    assert m1["fingerprint"] == dataset_fingerprint([fp0])
    assert m2["fingerprint"] == dataset_fingerprint([fp0, fp1]) != m1["fingerprint"]
    # Same data under another name: same fingerprint, shared artifacts.
    n_views_stored = len(local_store.list("dataset-view"))
    m_b = ds.create("b", first)
    assert m_b["fingerprint"] == m1["fingerprint"]
    assert len(local_store.list("dataset-view")) == n_views_stored
    # Other ids: another fingerprint.
    assert ds.create("c", first, ids=np.arange(10, 15))["fingerprint"] != m1["fingerprint"]


def test_ids_default_and_explicit(ds):
    ds.create("d", _batch(3, 0), ids=[10, 30, 20])
    m = ds.append("d", _batch(2, 1))
    np.testing.assert_array_equal(ds.load_ids("d"), [10, 30, 20, 31, 32])
    assert m["next_id"] == 33


def test_mismatched_batches_are_rejected(ds):
    ds.create("d", _batch(4, 0))
    with pytest.raises(
        ValueError,
        match=r"View 1 of the new batch has 6 features; dataset 'd' has 5 features in view 1",
    ):
        ds.append("d", _batch(2, 1, features=(3, 6)))
    with pytest.raises(ValueError, match=r"The new batch has 3 views; dataset 'd' has 2 views"):
        ds.append("d", _batch(2, 1, features=(3, 5, 2)))
    with pytest.raises(
        ValueError, match=r"View 0 of the new batch is sparse; dataset 'd' stores view 0 as dense"
    ):
        ds.append("d", [sp.csr_matrix(np.ones((2, 3))), np.ones((2, 5))])
    with pytest.raises(
        ValueError, match=r"View 0 of the new batch has dtype float32; .* stores float64"
    ):
        ds.append("d", [np.ones((2, 3), np.float32), np.ones((2, 5))])
    with pytest.raises(
        ValueError, match=r"View 1 has 3 samples; expected 2 \(the number of samples in view 0\)"
    ):
        ds.append("d", [np.ones((2, 3)), np.ones((3, 5))])
    assert ds.manifest("d")["version"] == 1  # nothing was appended


def test_duplicate_ids_are_rejected(ds):
    ds.create("d", _batch(4, 0))
    with pytest.raises(
        ValueError,
        match=r"2 id\(s\) of the new batch already exist in dataset 'd', such as \[2, 3\]",
    ):
        ds.append("d", _batch(3, 1), ids=[2, 3, 99])
    with pytest.raises(ValueError, match=r"repeat 1 value\(s\), such as \[7\]"):
        ds.append("d", _batch(3, 1), ids=[7, 8, 7])
    with pytest.raises(TypeError, match=r"ids must be integers .* got dtype float64"):
        ds.append("d", _batch(3, 1), ids=[7.0, 8.0, 9.0])
    with pytest.raises(ValueError, match=r"ids must have shape \(3,\)"):
        ds.append("d", _batch(3, 1), ids=[7, 8])
    assert ds.manifest("d")["n_samples"] == 4


@pytest.mark.parametrize(
    ("Xs", "error", "match"),
    [
        (np.ones((3, 2)), TypeError, r"Xs must be a list of views .* got ndarray"),
        ([], ValueError, r"at least one view"),
        ([np.ones(3)], ValueError, r"View 0 must be 2-D"),
        ([np.ones((0, 3))], ValueError, r"View 0 has 0 samples"),
        ([[[1.0]]], TypeError, r"View 0 is a list; expected a numpy array"),
    ],
)
def test_bad_views(ds, Xs, error, match):
    # Only the layout of a batch is the store's to check; what values suit the algorithm is
    # fastmice.check_views', which the pipeline applies before storing (tests/pipeline).
    with pytest.raises(error, match=match):
        ds.create("d", Xs)
    assert not ds.exists("d")


def test_create_twice_and_missing_datasets(ds):
    ds.create("d", _batch(2, 0))
    with pytest.raises(
        ValueError, match=r"Dataset 'd' already exists .* 2 samples in 1 batches\); use append"
    ):
        ds.create("d", _batch(2, 0))
    with pytest.raises(ArtifactNotFoundError, match=r"No dataset 'nope'"):
        ds.append("nope", _batch(2, 0))
    with pytest.raises(ValueError, match=r"Invalid dataset name '\.\./d'"):
        ds.create("../d", _batch(2, 0))
    with pytest.raises(ValueError, match=r"batches contains 3; dataset 'd' has batch ids 0\.\.0"):
        ds.load_views("d", batches=[3])
    with pytest.raises(ValueError, match=r"repeats a batch id"):
        ds.load_views("d", batches=[0, 0])


def test_labels_partial(ds):
    ds.create("d", _batch(2, 0), labels=[1, 0])
    ds.append("d", _batch(3, 1))
    assert ds.load_labels("d", batches=[1]) is None
    np.testing.assert_array_equal(ds.load_labels("d", batches=[0]), [1, 0])
    with pytest.raises(ValueError, match=r"Batches \[1\] of dataset 'd' have no labels"):
        ds.load_labels("d")
    with pytest.raises(ValueError, match=r"labels must be a 1-D .* of 2 values"):
        ds.append("d", _batch(2, 2), labels=[1, 2, 3])


def test_concurrent_append_is_detected(ds, local_store, monkeypatch):
    ds.create("d", _batch(2, 0))
    other = DatasetStore(local_store)
    real_put = type(local_store).put
    fired = []

    def put_then_someone_else_appends(self, *args, **kwargs):
        if not fired:
            fired.append(True)
            other.append("d", _batch(3, 9))
        return real_put(self, *args, **kwargs)

    monkeypatch.setattr(type(local_store), "put", put_then_someone_else_appends)
    with pytest.raises(
        RecordConflictError, match=r"dataset/d changed concurrently: expected it to be at version 1"
    ):
        ds.append("d", _batch(2, 1))
    monkeypatch.undo()
    assert ds.manifest("d")["n_samples"] == 5  # the other append stands, ours is not half-done


def test_corrupt_view_is_detected(ds, local_store):
    ds.create("d", _batch(5, 0))
    ref = ds.manifest("d")["batches"][0]["views"][1]
    path = local_store.local_path(ref)
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ArtifactIntegrityError, match=r"dataset-view/.* truncated"):
        ds.load_views("d")


def test_dataset_on_fsspec_memory(memory_store):
    ds = DatasetStore(memory_store)
    first, second = _batch(3, 0, sparse_view=True), _batch(2, 1, sparse_view=True)
    ds.create("m", first)
    ds.append("m", second)
    single = ds.load_views("m", batches=[0])
    assert type(single[0]) is np.ndarray  # nothing to memory-map on memory://
    Xs = ds.load_views("m")
    np.testing.assert_array_equal(Xs[1], np.vstack([first[1], second[1]]))
    assert (Xs[2] != sp.vstack([first[2], second[2]])).nnz == 0
