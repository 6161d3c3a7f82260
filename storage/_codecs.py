"""Encoders and decoders of the artifact formats. No pickle anywhere.

========== ================================= ============ ==================================
format     object                            file         reader
========== ================================= ============ ==================================
npy        ``np.ndarray``                    data.npy     ``np.load(allow_pickle=False)``
npz        ``dict[str, np.ndarray]``         data.npz     ``np.load(allow_pickle=False)``
sparse-npz ``scipy.sparse`` matrix / array   data.npz     ``scipy.sparse.load_npz``
json       JSON-able ``dict`` or ``list``    data.json    ``json.load``
parquet    ``pyarrow.Table``                 data.parquet ``pyarrow.parquet.read_table``
========== ================================= ============ ==================================

``scipy.sparse.load_npz`` itself calls ``np.load(..., allow_pickle=False)``.
"""

from __future__ import annotations

import json
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from storage.keys import is_sparse
from storage.rows import NpyRows, StackedRows, row_blocks

__all__ = ["FILE_NAMES", "decode", "encode", "format_of", "prepare", "to_json_bytes", "to_jsonable"]

FILE_NAMES = {
    "npy": "data.npy",
    "npz": "data.npz",
    "sparse-npz": "data.npz",
    "json": "data.json",
    "parquet": "data.parquet",
}
# Fixed member timestamps make a dict-of-arrays .npz byte-for-byte reproducible.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def is_arrow_table(obj: Any) -> bool:
    """Whether `obj` is a ``pyarrow.Table`` (without importing pyarrow)."""
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(obj, pa.Table)


def format_of(obj: Any) -> str:
    """Return the storage format of `obj` (see the module table).

    Raises
    ------
    TypeError
        For an object that has no format (the message lists the accepted types).
    """
    if isinstance(obj, np.ndarray | NpyRows | StackedRows):
        return "npy"
    if is_sparse(obj):
        return "sparse-npz"
    if is_arrow_table(obj):
        return "parquet"
    if isinstance(obj, Mapping):
        return "npz" if any(isinstance(v, np.ndarray) for v in obj.values()) else "json"
    if isinstance(obj, list | tuple):
        return "json"
    raise TypeError(
        f"Cannot store an object of type {type(obj).__module__}.{type(obj).__qualname__}: "
        f"expected a numpy array, a scipy.sparse matrix, a dict of numpy arrays, a JSON-able "
        f"dict or list, or a pyarrow.Table."
    )


def _check_no_objects(dtype: np.dtype, what: str) -> None:
    if dtype.hasobject:
        raise TypeError(
            f"{what} has dtype {dtype}, which holds Python objects and would need pickle; "
            f"convert it to a numeric or fixed-width string dtype."
        )


def prepare(fmt: str, obj: Any) -> Any:
    """Validate `obj` for `fmt` before anything is written; return what :func:`encode` takes."""
    if fmt == "npy":
        _check_no_objects(obj.dtype, "The array")
        return obj
    if fmt == "sparse-npz":
        _check_no_objects(obj.dtype, "The sparse matrix")
        return obj
    if fmt == "npz":
        arrays = {}
        for name, value in obj.items():
            if not isinstance(name, str) or not name:
                raise TypeError(
                    f"Array names in a dict of arrays must be non-empty str; got {name!r}."
                )
            arr = np.asarray(value)
            _check_no_objects(arr.dtype, f"Array {name!r}")
            arrays[name] = arr
        return arrays
    if fmt == "json":
        return to_json_bytes(obj, "the JSON artifact")
    return obj  # parquet: pyarrow validates on write


def encode(fmt: str, obj: Any, f: IO[bytes]) -> None:
    """Write `obj` (the output of :func:`prepare`) in format `fmt` to the binary file `f`."""
    if fmt == "npy" and not isinstance(obj, np.ndarray):  # a row reader: copied by blocks
        header = {"descr": np.lib.format.dtype_to_descr(obj.dtype), "fortran_order": False,
                  "shape": tuple(obj.shape)}
        np.lib.format.write_array_header_2_0(f, header)
        for block in row_blocks(obj, reuse=True):
            f.write(memoryview(np.ascontiguousarray(block).reshape(-1).view(np.uint8)))
    elif fmt == "npy":
        np.save(f, obj, allow_pickle=False)
    elif fmt == "npz":
        with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, arr in obj.items():
                info = zipfile.ZipInfo(name + ".npy", date_time=_ZIP_EPOCH)
                with zf.open(info, mode="w", force_zip64=True) as member:
                    np.lib.format.write_array(member, arr, allow_pickle=False)
    elif fmt == "sparse-npz":
        import scipy.sparse as sp

        sp.save_npz(f, obj, compressed=False)
    elif fmt == "json":
        f.write(obj)
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(obj, f)
    else:  # pragma: no cover - formats are validated before
        raise ValueError(f"Unknown format {fmt!r}; expected one of {sorted(FILE_NAMES)}.")


def decode(fmt: str, source: Path | IO[bytes], *, mmap: bool = False,
           rows: bool = False) -> Any:
    """Read an object of format `fmt` from a local path or a binary file object.

    With a local path, an ``npy`` artifact is returned as a read-only ``np.memmap`` with
    ``mmap=True``, or as a :class:`~storage.rows.NpyRows` row reader (2-D only) with
    ``rows=True``; the flags are ignored for other formats and for file objects.
    """
    if fmt == "npy":
        if rows and isinstance(source, Path):
            return NpyRows(source)
        mode = "r" if mmap and isinstance(source, Path) else None
        return np.load(source, mmap_mode=mode, allow_pickle=False)
    if fmt == "npz":
        with np.load(source, allow_pickle=False) as z:
            return {name: z[name] for name in z.files}
    if fmt == "sparse-npz":
        import scipy.sparse as sp

        return sp.load_npz(source)
    if fmt == "json":
        if isinstance(source, Path):
            return json.loads(source.read_bytes())
        return json.load(source)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(str(source) if isinstance(source, Path) else source)
    raise ValueError(f"Unknown format {fmt!r}; expected one of {sorted(FILE_NAMES)}.")


def to_jsonable(obj: Any, where: str = "value") -> Any:
    """Return a pure-Python JSON-able copy of `obj` (numpy scalars -> numbers, tuples -> lists).

    Raises
    ------
    TypeError
        For a dict key that is not a ``str`` or a value JSON cannot hold (an ndarray, a set,
        a path...); the message says where in `obj` it is.
    """
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, np.bool_ | np.integer | np.floating):
        return to_jsonable(obj.item(), where)
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(
                    f"{where} has a key {k!r} of type {type(k).__name__}; JSON keys must be str."
                )
            out[str(k)] = to_jsonable(v, f"{where}[{k!r}]")
        return out
    if isinstance(obj, list | tuple):
        return [to_jsonable(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    raise TypeError(
        f"{where} is of type {type(obj).__module__}.{type(obj).__qualname__}, which JSON cannot "
        f"hold: use dicts with str keys, lists, str, int, float, bool and None (store arrays "
        f"as their own artifacts)."
    )


def to_json_bytes(obj: Any, where: str = "value", *, indent: int | None = 1) -> bytes:
    """Serialize `obj` as sorted-key UTF-8 JSON (validated by :func:`to_jsonable`)."""
    text = json.dumps(to_jsonable(obj, where), sort_keys=True, indent=indent, ensure_ascii=False)
    return text.encode("utf-8")


def canonical_json(obj: Any) -> bytes:
    """Compact sorted-key JSON of an already JSON-able `obj` (what record checksums cover)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
