"""pipeline.ingest: the file loaders on generated files, and the shared benchmarks by name."""

from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from pipeline.ingest import (
    available_datasets,
    load_dataset,
    load_mat,
    load_npz,
    load_views,
    save_views_dir,
)
from storage.rows import NpyRows

SHARED_DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


def _sparse_dense(n, d, density, seed=0):
    """A dense array with about ``density`` non-zeros (a text-like view)."""
    return sp.random(n, d, density=density, random_state=seed, format="csr").toarray()


# ---------------------------------------------------------------------------- load_npz


@pytest.fixture
def npz_file(tmp_path):
    path = tmp_path / "toy.npz"
    rng = np.random.default_rng(0)
    np.savez(
        path,
        view0=rng.normal(size=(30, 4)),
        view1=_sparse_dense(30, 50, 0.05),
        view2=rng.normal(size=(30, 3)).astype(np.float32),
        labels=np.arange(30) % 3,
    )
    return path


def test_load_npz_auto_makes_sparse_views_csr(npz_file):
    Xs, y = load_npz(npz_file)
    with np.load(npz_file) as z:
        assert isinstance(Xs[0], np.ndarray) and Xs[0].dtype == np.float64
        assert sp.issparse(Xs[1]) and Xs[1].format == "csr"
        assert Xs[2].dtype == np.float32  # stored float32 stays float32
        np.testing.assert_array_equal(Xs[1].toarray(), z["view1"])
        np.testing.assert_array_equal(Xs[0], z["view0"])
    assert y.dtype == np.int64 and y.tolist() == (np.arange(30) % 3).tolist()


@pytest.mark.parametrize(
    ("sparse", "expected"),
    [(True, [1, 1, 1]), (False, [0, 0, 0]), ("keep", [0, 0, 0]), ("auto", [0, 1, 0])],
)
def test_load_npz_sparse_option(npz_file, sparse, expected):
    Xs, _ = load_npz(npz_file, sparse=sparse)
    assert [int(sp.issparse(X)) for X in Xs] == expected


def test_load_npz_without_labels(tmp_path):
    path = tmp_path / "nolabels.npz"
    np.savez(path, view0=np.ones((3, 2)), view1=np.ones((3, 5), dtype=np.int8))
    Xs, y = load_npz(path)
    assert y is None and Xs[1].dtype == np.float64  # integer views become float64


def _write(path, content):
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    ("arrays", "error", "match"),
    [
        (
            {"view0": np.ones((3, 2)), "view2": np.ones((3, 2))},
            ValueError,
            r"without gaps; found views \[0, 2\]",
        ),
        ({"X": np.ones((3, 2))}, ValueError, r"no arrays named view0.*found \['X'\]"),
        (
            {"view0": np.ones((3, 2)), "view1": np.ones((4, 2))},
            ValueError,
            r"View 1 \(view1 in bad.npz\) has 4 samples; expected 3 \(the number of samples "
            r"in view 0 \(view0 in bad.npz\)\)",
        ),
        (
            {"view0": np.ones((3, 2)), "labels": [0, 1]},
            ValueError,
            r"labels have 2 entries but the views have 3 rows",
        ),
        ({"view0": np.ones(3)}, ValueError, r"View 0 \(view0 in bad.npz\) must be 2-D.*\(3,\)"),
        ({"view0": np.array([["a"]])}, TypeError, r"View 0 \(view0 in bad.npz\) has dtype <U1"),
        ({"view0": np.array([[1.0, np.nan]])}, ValueError, "1 row\\(s\\) with NaN"),
        ({"view0": np.array([[None]], dtype=object)}, ValueError, "holds Python objects"),
    ],
)
def test_load_npz_layout_errors(tmp_path, arrays, error, match):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(error, match=match):
        load_npz(path)


def test_load_npz_file_errors(tmp_path, npz_file):
    with pytest.raises(FileNotFoundError, match="No such file"):
        load_npz(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match=r"garbage\.npz is not an \.npz archive"):
        load_npz(_write(tmp_path / "garbage.npz", b"not a zip file at all"))
    np.save(tmp_path / "single.npy", np.ones((2, 2)))
    with pytest.raises(ValueError, match="holds a single array"):
        load_npz(tmp_path / "single.npy")
    sp.save_npz(tmp_path / "matrix.npz", sp.eye(3, format="csr"))
    with pytest.raises(ValueError, match=r"one scipy.sparse matrix.*load_views"):
        load_npz(tmp_path / "matrix.npz")
    with pytest.raises(ValueError, match="sparse='yes' is not valid"):
        load_npz(npz_file, sparse="yes")


# ---------------------------------------------------------------------------- load_mat


def _cell(*items, column=False):
    cell = np.empty((len(items), 1) if column else (1, len(items)), dtype=object)
    for i, item in enumerate(items):
        cell.reshape(-1)[i] = item
    return cell


def test_load_mat_row_cell_of_n_by_d_views(tmp_path):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(12, 3)), rng.normal(size=(12, 7)).astype(np.float32)
    gt = (np.arange(12) % 4 + 1).astype(float).reshape(-1, 1)  # MATLAB doubles 1..k
    scipy.io.savemat(tmp_path / "d.mat", {"X": _cell(a, b), "gt": gt})
    Xs, y = load_mat(tmp_path / "d.mat")
    np.testing.assert_array_equal(Xs[0], a)
    np.testing.assert_array_equal(Xs[1], b)
    assert Xs[1].dtype == np.float32 and all(X.flags.c_contiguous for X in Xs)
    assert y.dtype == np.int64 and y.tolist() == (np.arange(12) % 4 + 1).tolist()


def test_load_mat_column_cell_of_d_by_n_views_keeps_sparse(tmp_path):
    rng = np.random.default_rng(2)
    dense = rng.normal(size=(10, 5))  # 10 samples
    text = sp.random(10, 40, density=0.1, random_state=0, format="csr")
    scipy.io.savemat(
        tmp_path / "d.mat",
        {"fea": _cell(dense.T, sp.csc_matrix(text.T), column=True), "Y": np.arange(10) % 2},
    )
    Xs, y = load_mat(tmp_path / "d.mat")
    assert Xs[0].shape == (10, 5) and Xs[0].flags.c_contiguous
    np.testing.assert_allclose(Xs[0], dense)
    assert sp.issparse(Xs[1]) and Xs[1].format == "csr" and Xs[1].shape == (10, 40)
    np.testing.assert_allclose(Xs[1].toarray(), text.toarray())
    assert y.shape == (10,)
    Xs, _ = load_mat(tmp_path / "d.mat", sparse=False)
    assert not sp.issparse(Xs[1])


def test_load_mat_orientation_without_labels(tmp_path):
    # No labels: the shared dimension (8) is the samples; view 1 is stored d x N.
    scipy.io.savemat(tmp_path / "d.mat", {"data": _cell(np.ones((8, 3)), np.ones((5, 8)))})
    Xs, y = load_mat(tmp_path / "d.mat")
    assert y is None and [X.shape for X in Xs] == [(8, 3), (8, 5)]


def test_load_mat_single_matrix_and_label_cell(tmp_path):
    # A plain matrix under "x" (case-insensitive) is one view; truelabel is a cell of vectors.
    labels = _cell(np.array([1, 2, 2, 1]), np.array([1, 2, 2, 1]))
    scipy.io.savemat(tmp_path / "d.mat", {"x": np.eye(4, 6), "truelabel": labels})
    Xs, y = load_mat(tmp_path / "d.mat")
    assert len(Xs) == 1 and Xs[0].shape == (4, 6) and y.tolist() == [1, 2, 2, 1]


def _v73_header() -> bytes:
    text = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan 1 00:00:00 2024 HDF5"
    return text.ljust(116, b" ") + b"\x00" * 8 + b"\x00\x02IM" + b"\x00" * 400


@pytest.mark.parametrize(
    ("contents", "error", "match"),
    [
        ({"views": _cell(np.ones((3, 2)))}, ValueError, r"no view variable named X / fea / data"),
        (
            {"X": _cell(*[np.ones((2, 2))] * 4).reshape(2, 2)},
            ValueError,
            r"cell array of shape \(2, 2\)",
        ),
        (
            {"X": _cell(np.ones((3, 2))), "y": [1, 2, 3, 4]},
            ValueError,
            r"shape \(3, 2\); neither dimension equals the number of samples 4",
        ),
        ({"X": _cell(np.ones((3, 2)), np.ones((4, 5)))}, ValueError, "share no dimension"),
    ],
)
def test_load_mat_layout_errors(tmp_path, contents, error, match):
    scipy.io.savemat(tmp_path / "bad.mat", contents)
    with pytest.raises(error, match=match):
        load_mat(tmp_path / "bad.mat")


def test_load_mat_file_errors(tmp_path):
    with pytest.raises(ValueError, match=r"v7\.3 \(HDF5\).*cannot read"):
        load_mat(_write(tmp_path / "new.mat", _v73_header()))
    with pytest.raises(ValueError, match=r"junk\.mat is empty \(0 bytes\)"):
        load_mat(_write(tmp_path / "junk.mat", b""))
    with pytest.raises(ValueError, match=r"not a readable MATLAB \.mat file"):
        load_mat(_write(tmp_path / "junk.mat", b"\xf0" * 200))
    with pytest.raises(FileNotFoundError, match="No such file"):
        load_mat(tmp_path / "missing.mat")


# ---------------------------------------------------------------------------- load_views / save


def test_save_and_load_views_dir_round_trip(tmp_path):
    dense = np.arange(12, dtype=np.float32).reshape(4, 3)
    text = sp.random(4, 20, density=0.2, random_state=1, format="csr")
    out = save_views_dir(tmp_path / "d", [dense, text], labels=[0, 1, 0, 1])
    assert not [f for f in out.iterdir() if f.name.startswith(".")]  # no temporary file left
    assert sorted(f.name for f in out.iterdir()) == ["labels.npy", "view0.npy", "view1.npz"]
    Xs, y = load_views(out)
    assert Xs[0].dtype == np.float32 and sp.issparse(Xs[1])
    np.testing.assert_array_equal(Xs[0], dense)
    np.testing.assert_array_equal(Xs[1].toarray(), text.toarray())
    assert y.tolist() == [0, 1, 0, 1]
    Xs, _ = load_views(out, mmap_mode="r")  # a float view stays on disk, read by rows
    assert isinstance(Xs[0], NpyRows)
    np.testing.assert_array_equal(Xs[0][1:3], dense[1:3])
    np.save(tmp_path / "ints.npy", np.arange(6, dtype=np.int32).reshape(3, 2))
    (ints,), _ = load_views([tmp_path / "ints.npy"], mmap_mode="r")
    assert isinstance(ints, np.ndarray) and ints.dtype == np.float64  # converted on load


def test_save_views_dir_refuses_then_replaces(tmp_path):
    save_views_dir(tmp_path, [np.ones((2, 1))] * 3, labels=[0, 1])
    with pytest.raises(FileExistsError, match=r"already holds.*view0\.npy.*overwrite=True"):
        save_views_dir(tmp_path, [np.zeros((2, 1))])
    save_views_dir(tmp_path, [np.zeros((2, 1))] * 2, overwrite=True)
    Xs, y = load_views(tmp_path)
    assert len(Xs) == 2 and y is None  # stale view2 and labels are gone


def test_load_views_dir_sorted_by_view_number(tmp_path):
    for v in (10, 2, 0):
        np.save(tmp_path / f"view{v}.npy", np.full((3, 1), v, dtype=float))
    (tmp_path / "notes.txt").write_text("ignored")
    Xs, _ = load_views(tmp_path)
    assert [X[0, 0] for X in Xs] == [0, 2, 10]


def test_load_views_from_files(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    np.save(tmp_path / "a.npy", np.ones((3, 2)))
    (tmp_path / "b.csv").write_text("f1,f2,f3\n1,2,3\n4,5,6\n7,8,9\n")
    (tmp_path / "c.csv").write_text("1.5,2\n3,4\n5,6\n")
    table = pa.table({"x": [1, 2, 3], "z": [0.5, 0.25, 0.0]})
    pq.write_table(table, tmp_path / "d.parquet")
    np.save(tmp_path / "y.npy", np.array([[0], [1], [1]]))
    paths = [tmp_path / n for n in ("a.npy", "b.csv", "c.csv", "d.parquet")]
    Xs, y = load_views(paths, labels=tmp_path / "y.npy")
    assert [X.shape for X in Xs] == [(3, 2), (3, 3), (3, 2), (3, 2)]
    np.testing.assert_array_equal(Xs[1][1], [4, 5, 6])
    np.testing.assert_array_equal(Xs[2][0], [1.5, 2])
    np.testing.assert_array_equal(Xs[3], [[1, 0.5], [2, 0.25], [3, 0.0]])
    assert y.tolist() == [0, 1, 1]
    Xs, y = load_views(str(tmp_path / "a.npy"))
    assert len(Xs) == 1 and y is None


def test_load_views_errors(tmp_path):
    np.save(tmp_path / "a.npy", np.ones((5, 2)))
    np.save(tmp_path / "b.npy", np.ones((4, 2)))
    np.save(tmp_path / "flat.npy", np.ones(4))
    (tmp_path / "x.txt").write_text("1,2")
    (tmp_path / "bad.npy").write_bytes(b"garbage")
    (tmp_path / "words.csv").write_text("a,b\n1,x\n")
    with pytest.raises(ValueError, match=r"View 1 \(b\.npy\) has 4 samples; expected 5"):
        load_views([tmp_path / "a.npy", tmp_path / "b.npy"])
    with pytest.raises(ValueError, match=r"unknown extension '\.txt'"):
        load_views([tmp_path / "x.txt"])
    with pytest.raises(ValueError, match=r"bad\.npy is not a \.npy file"):
        load_views([tmp_path / "bad.npy"])
    with pytest.raises(ValueError, match=r"words\.csv is not a numeric CSV"):
        load_views([tmp_path / "words.csv"])
    with pytest.raises(ValueError, match=r"View 0 \(flat\.npy\) must be 2-D"):
        load_views([tmp_path / "flat.npy"])
    with pytest.raises(ValueError, match=r"must hold one column of labels.*\(5, 2\)"):
        load_views([tmp_path / "a.npy"], labels=tmp_path / "a.npy")
    np.save(tmp_path / "y4.npy", np.arange(4))
    with pytest.raises(ValueError, match="labels have 4 entries but the views have 5 rows"):
        load_views([tmp_path / "a.npy"], labels=tmp_path / "y4.npy")
    with pytest.raises(FileNotFoundError, match="No such file"):
        load_views([tmp_path / "missing.npy"])
    with pytest.raises(ValueError, match="is a directory; pass a directory alone"):
        load_views([tmp_path / "a.npy", tmp_path])
    with pytest.raises(ValueError, match="paths is empty"):
        load_views([])
    with pytest.raises(TypeError, match="got int"):
        load_views(3)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="has no view files"):
        load_views(empty)
    np.save(empty / "view0.npy", np.ones((2, 2)))
    sp.save_npz(empty / "view0.npz", sp.eye(2, format="csr"))
    with pytest.raises(ValueError, match="two files for view 0"):
        load_views(empty)


# ---------------------------------------------------------------------------- shared by name


def test_load_dataset_by_name(tmp_path):
    np.savez(tmp_path / "Toy.npz", view0=np.ones((2, 2)), labels=[0, 1])
    np.savez(tmp_path / "another.npz", view0=np.ones((3, 2)))
    assert available_datasets(tmp_path) == ["another", "Toy"]
    Xs, y = load_dataset("toy", root=tmp_path)  # case-insensitive fallback
    assert Xs[0].shape == (2, 2) and y.tolist() == [0, 1]
    assert load_dataset("another", tmp_path)[1] is None
    with pytest.raises(ValueError, match=r"Unknown dataset 'nope'.*available: another, Toy"):
        load_dataset("nope", tmp_path)
    assert available_datasets(tmp_path / "absent") == []
    with pytest.raises(FileNotFoundError, match=r"Dataset folder .* does not exist"):
        load_dataset("Toy", root=tmp_path / "absent")


@pytest.mark.skipif(
    not SHARED_DATASETS.is_dir(), reason=f"shared benchmarks not found at {SHARED_DATASETS}"
)
def test_shared_benchmarks_load():
    assert {"MSRCv1", "3Sources", "Citeseer"} <= set(available_datasets(SHARED_DATASETS))
    Xs, y = load_dataset("MSRCv1", root=SHARED_DATASETS)
    assert [X.shape for X in Xs] == [(210, 24), (210, 576), (210, 512), (210, 256), (210, 254)]
    assert all(isinstance(X, np.ndarray) and X.dtype == np.float64 for X in Xs)
    assert y.dtype == np.int64 and np.unique(y).tolist() == list(range(7))
    Xs, y = load_dataset("3Sources", root=SHARED_DATASETS)  # text views: density ~0.04
    assert [X.shape[0] for X in Xs] == [169] * 3 and all(X.format == "csr" for X in Xs)
    with np.load(SHARED_DATASETS / "3Sources.npz") as z:
        np.testing.assert_array_equal(Xs[2].toarray(), z["view2"])
    assert np.unique(y).size == 6
