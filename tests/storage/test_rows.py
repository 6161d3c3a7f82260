"""Row readers: large dense views read by blocks of rows, never held whole."""

import numpy as np
import pytest

import fastmice
from storage import DatasetStore, content_key, open_store
from storage.rows import NpyRows, StackedRows, row_blocks


@pytest.fixture
def npy(tmp_path):
    X = np.random.default_rng(0).standard_normal((50, 7)).astype(np.float32)
    np.save(tmp_path / "view0.npy", X)
    return NpyRows(tmp_path / "view0.npy"), X


def test_rows_read_like_the_array(npy):
    rows, X = npy
    assert rows.shape == X.shape and rows.dtype == X.dtype and len(rows) == 50
    np.testing.assert_array_equal(rows[3:9], X[3:9])
    np.testing.assert_array_equal(rows[45:100], X[45:])
    np.testing.assert_array_equal(rows[-1], X[-1])
    picked = np.array([7, 2, 3, 4, 49, 2])  # any order, repeats, runs
    np.testing.assert_array_equal(rows[picked], X[picked])
    np.testing.assert_array_equal(rows[picked, 2:5], X[picked, 2:5])
    np.testing.assert_array_equal(rows[::7], X[::7])
    np.testing.assert_array_equal(np.asarray(rows), X)
    assert np.concatenate(list(row_blocks(rows, block_bytes=100))).tobytes() == X.tobytes()
    with pytest.raises(IndexError):
        rows[50]


def test_take_columns_and_buffered_reads_match_the_array(npy):
    rows, X = npy
    columns = np.array([6, 0, 3, 3])
    out = np.full((20, 4), np.nan, dtype=np.float32)
    np.testing.assert_array_equal(rows.take_columns(10, 30, columns, out), X[10:30][:, columns])
    np.testing.assert_array_equal(rows.take_columns(45, 50, columns, out[:5]), X[45:][:, columns])
    stacked, both = StackedRows([rows, X[:5]]), np.concatenate([X, X[:5]])
    np.testing.assert_array_equal(stacked.take_columns(40, 55, columns, np.empty((15, 4),
                                  np.float32)), both[40:55][:, columns])
    buffer = np.zeros((30, 7), dtype=np.float32)
    read = stacked.read(45, 55, out=buffer)
    assert np.shares_memory(read, buffer)
    np.testing.assert_array_equal(read, both[45:55])
    with pytest.raises(ValueError, match="buffer"):
        rows.read(0, 10, out=np.zeros((5, 7), np.float32))


def test_stacked_rows_read_across_parts(npy):
    rows, X = npy
    stacked = StackedRows([rows, X[:5]])
    both = np.concatenate([X, X[:5]])
    assert stacked.shape == (55, 7)
    np.testing.assert_array_equal(stacked[48:53], both[48:53])
    np.testing.assert_array_equal(stacked[np.array([54, 0, 50])], both[[54, 0, 50]])
    with pytest.raises(ValueError, match="differ in columns"):
        StackedRows([rows, np.zeros((2, 3), np.float32)])


@pytest.mark.parametrize("make, message", [
    (lambda p: np.save(p, np.zeros((3, 2, 2))), "2-D"),
    (lambda p: np.save(p, np.asfortranarray(np.zeros((3, 2)))), "Fortran"),
    (lambda p: p.write_bytes(b"not an npy file at all"), "not a valid .npy"),
])
def test_files_a_row_reader_cannot_read_are_named(tmp_path, make, message):
    path = tmp_path / "bad.npy"
    make(path)
    with pytest.raises(ValueError, match=message) as error:
        NpyRows(path)
    assert "bad.npy" in str(error.value)


def test_a_truncated_file_is_refused(tmp_path):
    np.save(tmp_path / "v.npy", np.ones((100, 10)))
    data = (tmp_path / "v.npy").read_bytes()
    (tmp_path / "v.npy").write_bytes(data[:-80])
    with pytest.raises(ValueError, match=r"v\.npy is truncated"):
        NpyRows(tmp_path / "v.npy")


def test_a_reader_hashes_and_stores_as_its_array(npy, tmp_path):
    rows, X = npy
    assert content_key(rows) == content_key(X)
    store = open_store(tmp_path / "store")
    ref = store.put("dataset-view", content_key(rows), rows)
    np.testing.assert_array_equal(store.get(ref), X)
    back = store.get(ref, rows=True)
    assert isinstance(back, NpyRows)
    np.testing.assert_array_equal(back[10:20], X[10:20])


def test_datasets_load_batches_as_row_readers(tmp_path):
    rng = np.random.default_rng(1)
    first, second = rng.random((6, 3)), rng.random((4, 3))
    datasets = DatasetStore(tmp_path / "store")
    datasets.create("d", [first])
    datasets.append("d", [second])
    (one,) = datasets.load_views("d", batches=[1], rows=True)
    (both,) = datasets.load_views("d", rows=True)
    assert isinstance(one, NpyRows) and isinstance(both, StackedRows)
    np.testing.assert_array_equal(both[:], np.concatenate([first, second]))


def test_the_view_validator_reads_a_reader_by_blocks(tmp_path, monkeypatch):
    from fastmice import _validation

    X = np.ones((40, 3))
    X[33, 1] = np.nan
    np.save(tmp_path / "v.npy", X)
    monkeypatch.setattr(_validation, "_CHECK_BYTES", 64)  # several blocks
    with pytest.raises(ValueError, match=r"View 0 \(v\.npy\) has 1 row\(s\) with NaN.*row 33"):
        fastmice.check_views([NpyRows(tmp_path / "v.npy")], names=["v.npy"])
    np.save(tmp_path / "ints.npy", np.ones((4, 2), dtype=np.int64))
    with pytest.raises(TypeError, match="int64; store it as float32 or float64"):
        fastmice.check_views([NpyRows(tmp_path / "ints.npy")])


def test_fitting_views_read_from_disk_gives_the_labels_of_views_in_memory(tmp_path):
    Xs, _ = fastmice.datasets.make_multiview_blobs(n_samples=400, n_clusters=4, random_state=0)
    readers = []
    for v, X in enumerate(Xs):
        np.save(tmp_path / f"view{v}.npy", X)
        readers.append(NpyRows(tmp_path / f"view{v}.npy"))
    in_memory = fastmice.FastMICE(4, n_groups=6, random_state=0).fit(Xs).labels_
    from_disk = fastmice.FastMICE(4, n_groups=6, random_state=0).fit(readers).labels_
    np.testing.assert_array_equal(in_memory, from_disk)
