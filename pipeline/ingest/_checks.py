"""What a data file must look like before a parser is let near it.

Parsers answer hostile files badly: numpy offers to load a text file renamed ``.npy`` "with
``allow_pickle``", memory-maps a header that declares exabytes, warns on an empty CSV. So each
file is first looked at here, cheaply (its size and first bytes, the ``.npy`` headers), and
refused in one line naming the file and what is wrong with it: empty, not the format its
name says, Python objects (which only pickle could load: never loaded), a header that
declares more data than the file holds, NUL bytes or non-UTF-8 bytes in a text file.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import IO

import numpy as np

from pipeline.ingest._common import LayoutError
from storage.rows import read_npy_header

__all__ = ["check_file"]

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_PARQUET_MAGIC = b"PAR1"


class _Refused(LayoutError):
    """A file refused before parsing (a ``LayoutError``: the loaders raise it as it is)."""


def _looks_like(head: bytes) -> str:
    if not head.strip():
        return "blank"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data"
    return "text"


def _npy_header(f: IO[bytes], where: str) -> tuple[tuple[int, ...], np.dtype]:
    try:
        shape, _, dtype = read_npy_header(f)
    except ValueError as exc:
        raise _Refused(f"{where} has a damaged .npy header ({exc}).") from None
    if dtype.hasobject:
        raise _Refused(f"{where} holds Python objects (dtype {dtype}), which only pickle could "
                       f"load; such files are refused unread. Save numbers (float64, float32).")
    return shape, dtype


def _check_npy(p: Path, size: int) -> None:
    with p.open("rb") as f:
        head = f.read(len(_NPY_MAGIC))
        if head != _NPY_MAGIC:
            raise _Refused(f"{p} is not a .npy file: it does not start with NumPy's magic bytes "
                           f"(it holds {_looks_like(head + f.read(256))}).")
        f.seek(0)
        shape, dtype = _npy_header(f, str(p))
        available = size - f.tell()
    needed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if needed > available:
        raise _Refused(f"{p} holds less than its header declares: shape {tuple(shape)} of "
                       f"{dtype} is {needed} bytes of data, the file has {available} (truncated, "
                       f"or a forged header).")


def _check_zip(p: Path, head: bytes) -> None:
    if head[:4] != _ZIP_MAGIC:
        raise _Refused(f"{p} is not an .npz archive (a zip file): it holds {_looks_like(head)}.")
    try:
        with zipfile.ZipFile(p) as z:
            for name in z.namelist():
                if name.endswith(".npy"):
                    with z.open(name) as member:
                        _npy_header(member, f"{p} (member {name})")
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise _Refused(f"{p} is a damaged .npz archive ({exc}).") from None


def _check_text(p: Path) -> None:
    data = p.read_bytes()
    if not data.strip():
        raise _Refused(f"{p} is empty: no rows to read.")
    if (nul := data.find(b"\0")) >= 0:
        raise _Refused(f"{p} is not a text CSV file: it has a NUL byte at offset {nul}.")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Refused(f"{p} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset "
                       f"{exc.start}.") from None


def check_file(path: str | Path) -> None:
    """Refuse a data file whose bytes cannot be what its suffix says (see the module doc).

    Raises
    ------
    ValueError
        Naming the file and what is wrong with it.
    """
    p = Path(path)
    size = p.stat().st_size
    if size == 0:
        raise _Refused(f"{p} is empty (0 bytes).")
    suffix = p.suffix.lower()
    if suffix == ".npy":
        _check_npy(p, size)
        return
    if suffix == ".csv":
        _check_text(p)
        return
    with p.open("rb") as f:
        head = f.read(512)
    if suffix == ".npz":
        _check_zip(p, head)
    elif suffix == ".parquet" and head[:4] != _PARQUET_MAGIC:
        raise _Refused(f"{p} is not a Parquet file: it does not start with PAR1 (it holds "
                       f"{_looks_like(head)}).")
