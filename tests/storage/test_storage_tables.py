"""labels_table / labels_from_table, through Parquet in a store."""

from __future__ import annotations

import numpy as np
import pytest

from storage import content_key, labels_from_table, labels_table


def test_labels_table_round_trip_through_parquet(any_store):
    ids = np.arange(100, 106, dtype=np.int64)
    base = np.random.default_rng(0).integers(0, 4, (6, 3)).astype(np.int32)
    labels = {f"member_{j:03d}": base[:, j] for j in range(3)}
    meta = {"seed": 7, "n_clusters": [2, 3], "code_version": "1"}
    table = labels_table(ids, labels, meta)
    assert table.column_names == ["sample_id", "member_000", "member_001", "member_002"]
    ref = any_store.put("base-labels", content_key(ids, base), table)
    assert ref.format == "parquet"
    got_ids, got_labels, got_meta = labels_from_table(any_store.get(ref))
    np.testing.assert_array_equal(got_ids, ids)
    assert got_ids.dtype == np.int64
    assert list(got_labels) == list(labels)
    for name, col in labels.items():
        np.testing.assert_array_equal(got_labels[name], col)
        assert got_labels[name].dtype == np.int32
    assert got_meta == meta


def test_string_ids_and_no_metadata():
    ids, labels, meta = labels_from_table(labels_table(np.array(["a", "b"]), {"y": [1, 0]}))
    assert ids.tolist() == ["a", "b"] and labels["y"].tolist() == [1, 0] and meta == {}


@pytest.mark.parametrize(
    ("ids", "labels", "meta", "error", "match"),
    [
        (np.arange(3), {"y": np.arange(4)}, None, ValueError, r"'y' has 4 values; expected 3"),
        (np.arange(3), {"sample_id": np.arange(3)}, None, ValueError, r"cannot be named"),
        (np.arange(3), {"y": np.zeros((3, 2))}, None, ValueError, r"'y' must be 1-D"),
        (np.zeros((3, 1)), {}, None, ValueError, r"ids must be 1-D"),
        (np.arange(3), {1: np.arange(3)}, None, TypeError, r"names must be str; got 1"),
        (np.arange(2), {}, {"x": np.arange(2)}, TypeError, r"metadata\['x'\] is of type numpy"),
    ],
)
def test_labels_table_errors(ids, labels, meta, error, match):
    with pytest.raises(error, match=match):
        labels_table(ids, labels, meta)


def test_labels_from_foreign_table():
    import pyarrow as pa

    with pytest.raises(ValueError, match=r"no 'sample_id' column \(columns: \['y'\]\)"):
        labels_from_table(pa.table({"y": [1, 2]}))
