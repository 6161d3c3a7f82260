"""put / get / exists / list / delete on every backend, and integrity checks on read."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

from storage import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    ArtifactRef,
    ArtifactStore,
    content_key,
    labels_table,
)

RNG = np.random.default_rng(0)


def _objects():
    dense = RNG.random((5, 3))
    B = sp.random(20, 8, density=0.2, format="csr", random_state=1)
    return {
        "npy": dense,
        "npy-fortran-int32": np.asfortranarray(RNG.integers(0, 9, (4, 6)).astype(np.int32)),
        "npy-strings": np.array(["a", "bc"]),
        "npz": {"centers": dense, "sigma": np.float64(0.5), "counts": np.arange(3)},
        "sparse-csr": B,
        "sparse-csc": B.tocsc(),
        "sparse-coo": B.tocoo(),
        "sparse-csr_array": sp.csr_array(B),
        "json-dict": {"k": 5, "seeds": [1, 2], "nested": {"x": None, "f": 0.25}},
        "json-list": [1, "two", 3.0],
        "parquet": labels_table(np.arange(4), {"labels": np.array([0, 1, 1, 0])}, {"k": 2}),
    }


def _assert_same(got, expected):
    if isinstance(expected, np.ndarray):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    elif sp.issparse(expected):
        assert type(got) is type(expected) and got.format == expected.format
        assert got.dtype == expected.dtype and (got != expected).nnz == 0
    elif isinstance(expected, pa.Table):
        assert got.equals(expected) and got.schema.metadata == expected.schema.metadata
    elif isinstance(expected, dict) and any(isinstance(v, np.ndarray) for v in expected.values()):
        assert list(got) == list(expected)
        for name, value in expected.items():
            np.testing.assert_array_equal(got[name], value)
    else:
        assert got == expected


@pytest.mark.parametrize("name", list(_objects()))
def test_put_get_round_trip(any_store, name):
    obj = _objects()[name]
    ref = any_store.put("thing", content_key(name), obj, metadata={"code_version": "1"})
    expected_format = "sparse-npz" if name.startswith("sparse") else name.split("-")[0]
    assert ref.format == expected_format
    assert ref == ArtifactRef("thing", content_key(name), ref.format)
    assert any_store.exists("thing", ref.key)
    _assert_same(any_store.get(ref), obj)
    _assert_same(any_store.get(ref.to_dict()), obj)  # the JSON-able form works too
    meta = any_store.read_meta(ref)
    assert meta["metadata"] == {"code_version": "1"}
    assert meta["format"] == ref.format and len(meta["sha256"]) == 64 and meta["size"] > 0


def test_stores_follow_the_protocol(any_store):
    assert isinstance(any_store, ArtifactStore)


def test_layout_and_meta(local_store):
    x = np.arange(4)
    key = content_key(x)
    ref = local_store.put("labels", key, x)
    folder = local_store.root / "labels" / key[:2] / key
    assert sorted(p.name for p in folder.iterdir()) == ["data.npy", "meta.json"]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["kind"] == "labels" and meta["key"] == key and meta["file"] == "data.npy"
    assert meta["size"] == (folder / "data.npy").stat().st_size
    assert meta["storage_version"] == "0.1.0" and meta["created"].endswith("+00:00")
    assert local_store.local_path(ref) == folder / "data.npy"
    assert (local_store.root / ".gitignore").read_text().splitlines()[-1] == "*"


def test_put_existing_key_is_a_no_op(any_store):
    x = np.arange(5)
    ref = any_store.put("labels", "k1", x)
    meta = any_store.read_meta(ref)
    again = any_store.put("labels", "k1", np.arange(5))
    assert again == ref
    assert any_store.read_meta(ref) == meta  # not rewritten (same created time)


def test_put_same_key_other_format_raises(any_store):
    any_store.put("labels", "k1", np.arange(5))
    with pytest.raises(
        ValueError, match=r"labels/k1 already exists .* as 'npy'; cannot put a 'json'"
    ):
        any_store.put("labels", "k1", {"a": 1})


def test_list_exists_ref_delete(any_store):
    assert any_store.list("labels") == [] and not any_store.exists("labels", "abc")
    keys = sorted(content_key(i) for i in range(3))
    for k in keys:
        any_store.put("labels", k, np.arange(3))
    any_store.put("consensus", "zz", [1])
    assert any_store.list("labels") == keys
    assert any_store.kinds() == ["consensus", "labels"]
    assert any_store.ref("labels", keys[0]) == ArtifactRef("labels", keys[0], "npy")
    any_store.delete(any_store.ref("labels", keys[0]))
    assert any_store.list("labels") == keys[1:]
    assert not any_store.exists("labels", keys[0])
    with pytest.raises(ArtifactNotFoundError, match=r"Cannot delete artifact labels/"):
        any_store.delete(ArtifactRef("labels", keys[0], "npy"))
    any_store.delete(ArtifactRef("labels", keys[0], "npy"), missing_ok=True)


def test_get_missing_raises_not_found(any_store):
    with pytest.raises(ArtifactNotFoundError, match=r"No artifact anchor-graph/abc in store") as e:
        any_store.get(ArtifactRef("anchor-graph", "abc", "sparse-npz"))
    assert isinstance(e.value, KeyError)
    with pytest.raises(ArtifactNotFoundError, match=r"No artifact labels/abc"):
        any_store.ref("labels", "abc")


def test_ref_format_mismatch_raises(any_store):
    any_store.put("labels", "k", np.arange(3))
    with pytest.raises(ValueError, match=r"stored as 'npy', but the ref says 'json'"):
        any_store.get(ArtifactRef("labels", "k", "json"))


def test_mmap_and_local_path(any_store):
    ref = any_store.put("labels", "k", np.arange(6.0).reshape(2, 3))
    got = any_store.get(ref, mmap=True)
    if any_store.local_path(ref) is None:  # memory://
        assert type(got) is np.ndarray
    else:
        assert isinstance(got, np.memmap) and not got.flags.writeable
        assert any_store.local_path(ref).is_file()
    np.testing.assert_array_equal(got, np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize(
    ("obj", "error", "match"),
    [
        (np.array([None, 1]), TypeError, r"holds Python objects and would need pickle"),
        ({"a": np.array([{}, 1], dtype=object)}, TypeError, r"Array 'a' has dtype object"),
        ({1, 2}, TypeError, r"Cannot store an object of type builtins\.set"),
        ({"a": {1, 2}}, TypeError, r"the JSON artifact\['a'\] is of type builtins\.set"),
        ({"a": {2: 1}}, TypeError, r"has a key 2 of type int; JSON keys must be str"),
    ],
)
def test_put_rejects_what_it_cannot_store_without_pickle(local_store, obj, error, match):
    with pytest.raises(error, match=match):
        local_store.put("thing", "k", obj)
    assert local_store.list("thing") == []


@pytest.mark.parametrize(
    ("kind", "key", "match"),
    [
        ("Anchor", "k", r"Invalid kind 'Anchor'"),
        ("records", "k", r"Invalid kind 'records': .* reserved"),
        ("a/b", "k", r"Invalid kind 'a/b'"),
        ("labels", "../x", r"Invalid key '\.\./x'"),
        ("labels", "", r"Invalid key ''"),
    ],
)
def test_put_validates_kind_and_key(local_store, kind, key, match):
    with pytest.raises(ValueError, match=match):
        local_store.put(kind, key, np.arange(2))


def test_artifact_ref_dict_round_trip():
    ref = ArtifactRef("anchor-graph", "ab12", "sparse-npz")
    assert ArtifactRef.from_dict(json.loads(json.dumps(ref.to_dict()))) == ref
    with pytest.raises(ValueError, match=r"lacks \['format'\]"):
        ArtifactRef.from_dict({"kind": "labels", "key": "ab"})
    with pytest.raises(ValueError, match=r"Unknown artifact format 'pickle'"):
        ArtifactRef("labels", "ab", "pickle")
    with pytest.raises(TypeError, match=r"must be a mapping; got str"):
        ArtifactRef.from_dict("labels/ab")


# --------------------------------------------------------------------------- integrity


def _data_rel(store, ref):
    return f"{ref.kind}/{ref.key[:2]}/{ref.key}/{store.read_meta(ref)['file']}"


def _truncate(data: bytes) -> bytes:
    return data[: len(data) - 7]


def _flip(data: bytes) -> bytes:
    b = bytearray(data)
    b[len(b) // 2] ^= 0x01
    return bytes(b)


@pytest.mark.parametrize("damage", [_truncate, _flip], ids=["truncated", "flipped-byte"])
@pytest.mark.parametrize("name", ["npy", "sparse-csr", "parquet", "json-dict"])
def test_corruption_is_detected_and_quarantined_by_get(any_store, damage, name):
    obj = _objects()[name]
    ref = any_store.put("thing", "k", obj)
    rel = _data_rel(any_store, ref)
    any_store._write_bytes(rel, damage(any_store._read_bytes(rel)))
    with pytest.raises(
        ArtifactIntegrityError, match=r"thing/k .* is corrupt: .*It was moved to"
    ) as e:
        any_store.get(ref)
    assert "quarantine" in e.value.quarantined_to
    assert not any_store.exists("thing", "k")
    assert any_store.list("thing") == []
    [entry] = any_store.quarantined()
    assert entry["kind"] == "thing" and entry["key"] == "k"
    assert "truncated" in entry["reason"] or "sha256 mismatch" in entry["reason"]
    # The caller recomputes and puts again: a fresh, valid artifact.
    any_store.put("thing", "k", obj)
    _assert_same(any_store.get(ref), obj)


@pytest.mark.parametrize("damage", [_truncate, _flip], ids=["truncated", "flipped-byte"])
def test_exists_reports_corrupt_artifact_absent_and_quarantines_it(any_store, damage):
    ref = any_store.put("labels", "k", np.arange(1000))
    rel = _data_rel(any_store, ref)
    any_store._write_bytes(rel, damage(any_store._read_bytes(rel)))
    assert any_store.exists("labels", "k") is False
    assert [q["key"] for q in any_store.quarantined()] == ["k"]
    with pytest.raises(ArtifactNotFoundError, match=r"No artifact labels/k"):
        any_store.get(ref)  # never silently used


def test_quarantine_keeps_the_bad_files(local_store):
    ref = local_store.put("labels", "k", np.arange(100))
    path = local_store.local_path(ref)
    damaged = _flip(path.read_bytes())
    path.write_bytes(damaged)
    assert not local_store.exists("labels", "k")
    assert not path.parent.exists()
    [folder] = (local_store.root / "quarantine" / "labels").iterdir()
    assert folder.name.startswith("k.")
    assert sorted(p.name for p in folder.iterdir()) == ["data.npy", "meta.json", "quarantine.json"]
    assert (folder / "data.npy").read_bytes() == damaged
    reason = json.loads((folder / "quarantine.json").read_text())
    assert reason["kind"] == "labels" and "sha256 mismatch" in reason["reason"]


@pytest.mark.parametrize(
    ("damage_meta", "match"),
    [
        (lambda m: b"{not json", r"meta\.json is unreadable"),
        (lambda m: json.dumps({**json.loads(m), "format": "pickle"}).encode(), r"unreadable"),
        (lambda m: json.dumps({**json.loads(m), "sha256": "0" * 64}).encode(), r"sha256 mismatch"),
    ],
)
def test_corrupt_meta_is_detected(any_store, damage_meta, match):
    ref = any_store.put("labels", "k", np.arange(10))
    rel = "labels/k/k/meta.json"
    any_store._write_bytes(rel, damage_meta(any_store._read_bytes(rel)))
    with pytest.raises(ArtifactIntegrityError, match=match):
        any_store.get(ref)
    assert not any_store.exists("labels", "k")


def test_missing_data_file_is_detected(local_store):
    ref = local_store.put("labels", "k", np.arange(10))
    local_store.local_path(ref).unlink()
    with pytest.raises(ArtifactIntegrityError, match=r"its data file data\.npy is missing"):
        local_store.get(ref)


def _rewrite_with_valid_checksum(store, ref, data: bytes) -> None:
    """Replace the data file *and* fix meta.json: only decoding can catch the problem."""
    import hashlib

    rel_dir = f"{ref.kind}/{ref.key[:2]}/{ref.key}"
    meta = store.read_meta(ref)
    store._write_bytes(f"{rel_dir}/{meta['file']}", data)
    meta.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    store._write_bytes(f"{rel_dir}/meta.json", json.dumps(meta).encode())


def test_undecodable_artifact_with_valid_checksum_is_quarantined(any_store):
    ref = any_store.put("anchor-graph", "k", sp.eye(3, format="csr"))
    _rewrite_with_valid_checksum(any_store, ref, b"PK\x03\x04 not really a zip")
    with pytest.raises(ArtifactIntegrityError, match=r"cannot be decoded as sparse-npz"):
        any_store.get(ref)
    assert not any_store.exists("anchor-graph", "k")


def test_pickled_payload_is_never_loaded(local_store):
    ref = local_store.put("labels", "k", np.arange(3))
    buf = io.BytesIO()
    np.save(buf, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    _rewrite_with_valid_checksum(local_store, ref, buf.getvalue())
    with pytest.raises(ArtifactIntegrityError, match=r"allow_pickle=False"):
        local_store.get(ref)
