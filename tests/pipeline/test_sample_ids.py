"""Sample ids from an id column of Parquet/CSV views: read, aligned by id, refused, stored."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from pipeline.ingest import load_views, read_samples, register_batch
from storage import DatasetStore

N = 40


def _write(path, ids, X, prefix="f"):
    columns = {"doc": ids, **{f"{prefix}{j}": X[:, j] for j in range(X.shape[1])}}
    table = pa.table(columns)
    if path.suffix == ".csv":
        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path)
    return path


@pytest.fixture
def tables(tmp_path):
    """Two views of N samples with string ids: a.parquet in id order, b.csv shuffled."""
    rng = np.random.default_rng(0)
    ids = np.array([f"doc-{i:05d}" for i in range(N)])
    X0, X1 = rng.random((N, 3)), rng.random((N, 4))
    order = rng.permutation(N)
    a = _write(tmp_path / "a.parquet", ids, X0)
    b = _write(tmp_path / "b.csv", ids[order], X1[order], prefix="g")
    return {"a": a, "b": b, "ids": ids, "X0": X0, "X1": X1, "order": order, "dir": tmp_path}


def test_views_are_aligned_by_their_id_column(tables):
    Xs, labels, ids = read_samples([tables["a"], tables["b"]], id_column="doc")
    assert labels is None
    np.testing.assert_array_equal(ids, tables["ids"])
    np.testing.assert_allclose(Xs[0], tables["X0"])
    np.testing.assert_allclose(Xs[1], tables["X1"])  # b.csv's rows put back in a's order


def test_the_first_view_sets_the_order(tables):
    Xs, _, ids = read_samples([tables["b"], tables["a"]], id_column="doc")
    np.testing.assert_array_equal(ids, tables["ids"][tables["order"]])
    np.testing.assert_allclose(Xs[1], tables["X0"][tables["order"]])


def test_integer_ids_stay_integers(tmp_path):
    X = np.random.default_rng(1).random((N, 2))
    path = _write(tmp_path / "v.parquet", np.arange(100, 100 + N), X)
    _, _, ids = read_samples([path], id_column="doc")
    assert ids.dtype == np.int64 and ids[0] == 100


def test_without_an_id_column_no_ids(tables, tmp_path):
    X = np.random.default_rng(2).random((N, 2))
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1]}), tmp_path / "n.parquet")
    Xs, _, ids = read_samples([tmp_path / "n.parquet"])
    assert ids is None and Xs[0].shape == (N, 2)


def _refusal(paths, id_column=None):
    with pytest.raises(ValueError) as info:
        read_samples(paths, id_column=id_column)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_a_string_column_without_an_id_column_is_refused_not_dropped(tables):
    text = _refusal([tables["a"]])
    assert "Column 'doc'" in text and "a.parquet" in text and "--id-column doc" in text
    text = _refusal([tables["b"]])  # a CSV with a header
    assert "Column 'doc'" in text and "b.csv" in text


def test_ids_missing_from_a_view_are_refused_naming_them(tables):
    keep = np.ones(N, bool)
    keep[[3, 7]] = False
    short = _write(tables["dir"] / "short.parquet", tables["ids"][keep], tables["X1"][keep])
    text = _refusal([tables["a"], short], "doc")
    assert "2 id(s) of" in text and "'doc-00003', 'doc-00007'" in text and "short.parquet" in text
    extra = np.concatenate([tables["ids"], ["doc-99999"]])
    more = _write(tables["dir"] / "more.parquet", extra, np.vstack([tables["X1"], [[0] * 4]]))
    text = _refusal([tables["a"], more], "doc")
    assert "'doc-99999'" in text and "more.parquet" in text


def test_repeated_ids_are_refused_naming_them(tables):
    ids = tables["ids"].copy()
    ids[5] = ids[4]
    path = _write(tables["dir"] / "dup.parquet", ids, tables["X0"])
    text = _refusal([path], "doc")
    assert "repeats 1 id(s): 'doc-00004'" in text and "dup.parquet" in text


def test_other_id_column_problems_are_refused(tables):
    assert "has no column 'name'" in _refusal([tables["a"]], "name")
    bad = tables["dir"] / "words.parquet"
    pq.write_table(pa.table({"doc": tables["ids"], "x": np.ones(N), "colour": ["red"] * N}), bad)
    text = _refusal([bad], "doc")
    assert "Column 'colour'" in text and "words.parquet" in text and "--id-column" not in text
    np.save(tables["dir"] / "v.npy", tables["X0"])
    assert "needs .parquet or .csv views" in _refusal([tables["dir"] / "v.npy"], "doc")
    floats = tables["dir"] / "floats.parquet"
    pq.write_table(pa.table({"doc": np.arange(N) + 0.5, "x": np.ones(N)}), floats)
    assert "must be integers or strings" in _refusal([floats], "doc")


def test_load_views_refuses_a_string_column(tables):
    with pytest.raises(ValueError, match=r"Column 'doc' of .*a\.parquet is not numeric"):
        load_views([tables["a"]])


def test_ids_are_stored_with_the_batch_and_enter_its_fingerprint(tables, store):
    Xs, _, ids = read_samples([tables["a"], tables["b"]], id_column="doc")
    manifest, written = register_batch(store, "docs", Xs, None, mode="create", ids=ids)
    assert written and manifest["id_kind"] == "str"
    datasets = DatasetStore(store)
    np.testing.assert_array_equal(datasets.load_ids("docs"), tables["ids"])
    # The same data again: nothing written; other ids: other data.
    assert register_batch(store, "docs", Xs, None, mode="create", ids=ids)[1] is False
    with pytest.raises(ValueError, match="already exists"):
        register_batch(store, "docs", Xs, None, mode="create", ids=ids[::-1].copy())
    # A later batch must bring string ids, new ones.
    new = [X[:2] + 1 for X in Xs]
    with pytest.raises(ValueError, match="has string sample ids"):
        register_batch(store, "docs", new, None, mode="append")
    with pytest.raises(ValueError, match=r"already exist.*doc-00000"):
        register_batch(store, "docs", new, None, mode="append", ids=ids[:2])
    manifest, written = register_batch(store, "docs", new, None, mode="append",
                                       ids=np.array(["n1", "n2"]))
    assert written and datasets.load_ids("docs")[-2:].tolist() == ["n1", "n2"]


def test_a_lost_ids_file_is_restored_from_the_same_data(tables, store):
    Xs, _, ids = read_samples([tables["a"], tables["b"]], id_column="doc")
    manifest, _ = register_batch(store, "docs", Xs, None, mode="create", ids=ids)
    path = store.local_path(manifest["batches"][0]["ids"])
    datasets = DatasetStore(store)
    path.unlink()
    assert datasets.restore("docs", 0, Xs, None, ids) == ["ids"]
    np.testing.assert_array_equal(datasets.load_ids("docs"), tables["ids"])
