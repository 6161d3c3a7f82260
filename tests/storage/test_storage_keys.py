"""content_key: canonical hashing of parameters, arrays and sparse matrices."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import storage.keys
from storage import content_key

REPO = Path(__file__).resolve().parents[2]


def test_key_is_sha256_hex_and_deterministic():
    x = np.arange(10.0)
    key = content_key("graph", {"k": 5, "seed": 1}, x)
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    assert key == content_key("graph", {"seed": 1, "k": 5}, x.copy())


def test_key_scheme_is_stable():
    # Equal to sha256 of the documented canonical JSON, computed by hand once. A change here
    # changes every key in every existing store: bump KEY_SCHEME instead.
    key = content_key({"a": 1, "b": [1.5, None, "x"]}, np.arange(3, dtype="<i8"))
    assert key == "f536830774d6219c3bd2c3b9d29cdd77a048a1f4cf58c1b91da9e18ca4774293"


def test_c_and_f_order_hash_the_same():
    a = np.arange(12.0).reshape(3, 4)
    f = np.asfortranarray(a)
    assert not f.flags.c_contiguous
    assert content_key(a) == content_key(f)
    strided = np.arange(24.0).reshape(6, 4)[::2]
    assert content_key(strided) == content_key(np.ascontiguousarray(strided))


def test_non_contiguous_arrays_are_hashed_in_blocks(monkeypatch):
    a = np.asfortranarray(np.random.default_rng(0).random((50, 7)))
    whole = content_key(a)
    monkeypatch.setattr(storage.keys, "_BLOCK_BYTES", 3 * 7 * 8)  # 3 rows per block
    assert content_key(a) == whole == content_key(np.ascontiguousarray(a))


@pytest.mark.parametrize(
    ("other", "what"),
    [
        (np.arange(6, dtype=np.int32).reshape(2, 3), "dtype"),
        (np.arange(6, dtype=np.int64).reshape(3, 2), "shape"),
        (np.arange(6, dtype=np.int64), "ndim"),
        (np.arange(6, dtype=">i8").reshape(2, 3), "byte order"),
        (np.arange(1, 7, dtype=np.int64).reshape(2, 3), "values"),
    ],
)
def test_dtype_shape_or_value_change_changes_key(other, what):
    base = np.arange(6, dtype=np.int64).reshape(2, 3)
    assert content_key(base) != content_key(other), what


def _dense():
    return np.array([[0.0, 1.0, 0.0, 2.0], [3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 4.0, 5.0]])


def _equal_sparse_matrices():
    d = _dense()
    rows, cols = np.nonzero(d)
    # COO with the 5.0 split into duplicates 2.0 + 3.0, in shuffled order
    r = np.r_[rows, 2][::-1]
    c = np.r_[cols, 3][::-1]
    v = np.r_[d[rows, cols][:-1], 2.0, 3.0][::-1]
    unsorted = sp.csr_matrix(
        (np.array([2.0, 1.0, 3.0, 5.0, 4.0]), np.array([3, 1, 0, 3, 2]), np.array([0, 2, 3, 5])),
        shape=(3, 4),
    )
    assert not unsorted.has_sorted_indices
    int64_indices = sp.csr_matrix(d)
    int64_indices.indices = int64_indices.indices.astype(np.int64)
    int64_indices.indptr = int64_indices.indptr.astype(np.int64)
    return {
        "csr": sp.csr_matrix(d),
        "coo-duplicates": sp.coo_matrix((v, (r, c)), shape=(3, 4)),
        "csr-unsorted": unsorted,
        "csc": sp.csc_matrix(d),
        "csr_array": sp.csr_array(d),
        "lil": sp.lil_matrix(d),
        "int64-indices": int64_indices,
    }


def test_equal_sparse_matrices_built_differently_hash_the_same():
    keys = {name: content_key(X) for name, X in _equal_sparse_matrices().items()}
    assert len(set(keys.values())) == 1, keys


def test_hashing_does_not_modify_the_callers_matrix():
    X = _equal_sparse_matrices()["csr-unsorted"]
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    content_key(X)
    assert not X.has_sorted_indices
    for got, expected in zip((X.data, X.indices, X.indptr), before, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_sparse_dtype_and_shape_matter():
    X = sp.csr_matrix(_dense())
    assert content_key(X) != content_key(X.astype(np.float32))
    assert content_key(X) != content_key(sp.csr_matrix((X.data, X.indices, X.indptr), shape=(3, 5)))
    assert content_key(X) != content_key(_dense())  # sparse and dense are different objects


def test_plain_value_semantics():
    assert content_key(np.int64(3), np.float64(0.5), np.bool_(True)) == content_key(3, 0.5, True)
    assert content_key((1, 2)) == content_key([1, 2])
    assert content_key(1) != content_key(1.0) != content_key(True)
    assert content_key("a", "b") != content_key(["a", "b"])
    assert content_key({"a": [1, 2]}) != content_key({"a": [2, 1]})
    assert content_key(b"xy") != content_key("xy")


@pytest.mark.parametrize(
    ("part", "error", "match"),
    [
        (np.array([1, "a"], dtype=object), TypeError, r"part 0: dtype object holds Python objects"),
        ({1, 2}, TypeError, r"part 0 of type builtins\.set"),
        ({"a": {3: 1}}, TypeError, r"part 0\['a'\] has a key 3 of type int"),
        ({"p": Path("x")}, TypeError, r"part 0\['p'\] of type pathlib"),
        ({"$ndarray": "abc"}, ValueError, r"reserved by the canonical encoding"),
    ],
)
def test_unhashable_values_raise_clear_errors(part, error, match):
    with pytest.raises(error, match=match):
        content_key(part)


def test_import_storage_is_cheap_and_never_imports_prefect():
    code = (
        "import sys, storage, storage.datasets\n"
        "heavy = [m for m in ('prefect', 'pyarrow', 'fsspec', 'scipy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=REPO, env={"PYTHONPATH": str(REPO)}
    )
