"""Content addresses: ``content_key(*parts)`` and the canonical encoding behind it.

A key is the sha256 (hex) of a canonical JSON document with sorted keys. Plain values
(dicts with ``str`` keys, lists, tuples, strings, numbers, booleans, ``None``, numpy scalars)
appear in it as themselves; every ndarray and scipy.sparse matrix is replaced by the sha256
digest of its own canonical bytes:

* ndarray: ``dtype`` descriptor (byte order included) + ``shape`` + the bytes in C order, so a
  C-ordered and an F-ordered array with equal values hash the same and a dtype or shape change
  gives a different key. Large non-contiguous arrays are hashed in blocks of rows, never
  copied whole.
* scipy.sparse (any format, matrix or array): the canonical CSR form (duplicates summed,
  indices sorted; explicit zeros are kept) as ``dtype`` + ``shape`` + ``nnz`` + ``data`` +
  ``indices`` and ``indptr`` as int64, so equal matrices built differently hash the same.

Nothing is pickled and the caller's objects are never modified.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from storage._filememo import FileMemo
from storage.rows import NpyRows, StackedRows, row_blocks

__all__ = ["content_key"]

#: Bumping this changes every key (a deliberate, global cache invalidation).
KEY_SCHEME = "fastmice-content-key/1"
_BLOCK_BYTES = 32 * 2**20
_reader_digests = FileMemo()
_RESERVED = ("$ndarray", "$sparse", "$bytes")


def content_key(*parts: Any) -> str:
    """Return the content address (sha256 hex digest) of `parts`.

    Parameters
    ----------
    *parts : JSON-able values, numpy arrays or scipy.sparse matrices
        What the artifact was computed from and how: typically the input fingerprints or keys,
        the parameters (a dict), and a code version such as ``fastmice.CODE_VERSION``.
        Containers may nest arrays and sparse matrices.

    Returns
    -------
    key : str of length 64
        Lower-case hexadecimal sha256. Equal inputs always give equal keys, across processes,
        machines and Python versions.

    Raises
    ------
    TypeError
        For a value that has no canonical form (an object-dtype array, a ``set``, a dict with
        non-``str`` keys, an arbitrary object...); the message says where in `parts` it is.
    ValueError
        For a dict key reserved by the encoding (``"$ndarray"``, ``"$sparse"``, ``"$bytes"``).

    Notes
    -----
    numpy scalars hash like the equal Python numbers (``np.int64(3)`` like ``3``), tuples like
    lists, and ``1`` differently from ``1.0`` and from ``True``.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> content_key(a, {"k": 5}) == content_key(np.asfortranarray(a), {"k": 5})
    True
    >>> content_key(a) == content_key(a.astype(np.float32))
    False
    """
    return key_of_canonical([canonical(part, f"part {i}") for i, part in enumerate(parts)])


def key_of_canonical(skeletons: list[Any]) -> str:
    """Hash a list of already-canonical parts (outputs of :func:`canonical`)."""
    text = json.dumps(
        {"scheme": KEY_SCHEME, "parts": skeletons},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical(obj: Any, where: str = "value") -> Any:
    """Return the JSON-able canonical form of `obj`, with arrays replaced by their digests.

    ``content_key(*parts) == key_of_canonical([canonical(p) for p in parts])``; computing the
    canonical form once lets a caller derive several keys from the same arrays while hashing
    their bytes only once.
    """
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, np.ndarray | NpyRows | StackedRows):
        return {"$ndarray": array_digest(obj, where)}
    if isinstance(obj, np.bool_ | np.integer | np.floating):
        return canonical(obj.item(), where)
    if is_sparse(obj):
        return {"$sparse": sparse_digest(obj, where)}
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(
                    f"content_key: {where} has a key {k!r} of type {type(k).__name__}; "
                    f"dict keys must be str."
                )
            if k in _RESERVED:
                raise ValueError(
                    f"content_key: {where} uses the key {k!r}, which is reserved by the "
                    f"canonical encoding ({', '.join(_RESERVED)})."
                )
            out[k] = canonical(v, f"{where}[{k!r}]")
        return out
    if isinstance(obj, list | tuple):
        return [canonical(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, bytes):
        return {"$bytes": hashlib.sha256(obj).hexdigest()}
    raise TypeError(
        f"content_key cannot hash {where} of type {type(obj).__module__}.{type(obj).__qualname__}: "
        f"expected JSON-able values (dict with str keys, list, tuple, str, int, float, bool, "
        f"None), numpy arrays or scipy.sparse matrices."
    )


def is_sparse(obj: Any) -> bool:
    """Whether `obj` is a scipy.sparse matrix or array (without importing scipy)."""
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(obj)


def _header(**fields: Any) -> bytes:
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode("ascii") + b"\0"


def _descr(dtype: np.dtype, where: str) -> Any:
    if dtype.hasobject:
        raise TypeError(
            f"content_key cannot hash {where}: dtype {dtype} holds Python objects; "
            f"convert it to a numeric or fixed-width string dtype."
        )
    return np.lib.format.dtype_to_descr(dtype)


def _update_c_order(h: Any, a: np.ndarray) -> None:
    """Feed the bytes of `a` in C order to `h`, in blocks of rows if `a` is not C-contiguous."""
    if a.flags.c_contiguous:
        h.update(a.reshape(-1).view(np.uint8))
        return
    row_bytes = max(1, a[:1].nbytes)
    step = max(1, _BLOCK_BYTES // row_bytes)
    for start in range(0, a.shape[0], step):
        h.update(np.ascontiguousarray(a[start : start + step]).reshape(-1).view(np.uint8))


def array_digest(a: np.ndarray | NpyRows | StackedRows, where: str = "array") -> str:
    """sha256 of an ndarray's dtype, shape and C-order bytes (see the module docstring).

    A row reader (:mod:`storage.rows`) hashes like the array it reads, block by block.
    """
    h = hashlib.sha256(b"ndarray\0" + _header(descr=_descr(a.dtype, where), shape=list(a.shape)))
    if isinstance(a, np.ndarray):
        _update_c_order(h, a)
        return h.hexdigest()

    def stream() -> str:
        for block in row_blocks(a, _BLOCK_BYTES, reuse=True):
            h.update(block.reshape(-1).view(np.uint8))
        return h.hexdigest()

    if not isinstance(a, NpyRows):
        return stream()
    with open(a.path, "rb") as f:  # a file's digest is computed once while it is unchanged
        return _reader_digests(f.fileno(), f"{a.path}:{a.offset}", stream)


def canonical_csr(X: Any) -> Any:
    """Return `X` as CSR in canonical format (summed duplicates, sorted indices).

    `X` itself is never modified: a copy is made only when `X` is not already canonical CSR.
    """
    csr = X.tocsr()
    if csr.ndim != 2:
        raise ValueError(f"Only 2-D sparse matrices are supported; got shape {csr.shape}.")
    if not csr.has_canonical_format:
        if csr is X:
            csr = csr.copy()
        csr.sum_duplicates()
    return csr


def sparse_digest(X: Any, where: str = "sparse matrix") -> str:
    """sha256 of a sparse matrix in canonical CSR form (see the module docstring)."""
    descr = _descr(X.dtype, where)
    csr = canonical_csr(X)
    nnz = int(csr.nnz)
    h = hashlib.sha256(b"sparse-csr\0" + _header(descr=descr, shape=list(csr.shape), nnz=nnz))
    _update_c_order(h, csr.data[:nnz])
    _update_c_order(h, csr.indices[:nnz].astype(np.int64, copy=False))
    _update_c_order(h, csr.indptr.astype(np.int64, copy=False))
    return h.hexdigest()
