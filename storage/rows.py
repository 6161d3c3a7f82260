"""Row readers: a large dense view on disk, read a block of rows at a time.

A memory-mapped ``.npy`` view keeps every page it has been read through in the process's
resident memory (file-backed, but counted, and not given back while the map lives): reading
a 10 GB view once makes a 10 GB process. :class:`NpyRows` reads the rows it is asked for
with ``pread`` instead, and gathers a block's sampled columns straight from a mapping whose
pages it gives back after each block (:meth:`NpyRows.take_columns`), so memory stays at the
block being worked on while the operating system's page cache does the caching. It looks
enough like a 2-D array
(``shape``, ``dtype``, ``X[i:j]``, ``X[rows]``) for the algorithm, which reads views block by
block. :class:`StackedRows` puts several readers (a dataset's batches) one after the other.

>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "view0.npy")
>>> np.save(path, np.arange(12.0).reshape(4, 3))
>>> X = NpyRows(path)
>>> X.shape, X[1:3].tolist(), X[np.array([0, 3])][:, 0].tolist()
((4, 3), [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]], [0.0, 9.0])
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["BLOCK_BYTES", "NpyRows", "StackedRows", "read_npy_header", "row_blocks"]

#: Bytes of rows read at a time when a whole reader is streamed (hashed, copied, checked).
BLOCK_BYTES = 64 * 2**20


def read_npy_header(f: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` from the header of the ``.npy`` file ``f`` (left at
    the data's start).

    Raises
    ------
    ValueError
        Why the header cannot be read (damaged, forged, or of an unknown version).
    """
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(f)
        if version in ((2, 0), (3, 0)):
            return np.lib.format.read_array_header_2_0(f)
    except (ValueError, SyntaxError, OSError, EOFError) as exc:  # numpy parses the text
        raise ValueError(str(exc)) from None
    raise ValueError(f"unsupported .npy format version {version}")


#: Mapped pages can be given back block by block (Linux, Python >= 3.8).
_CAN_RELEASE = hasattr(mmap, "MADV_DONTNEED") and hasattr(mmap.mmap, "madvise")


#: Linux >= 5.14: map a range's pages in one call (the mmap module has no name for it).
_MADV_POPULATE_READ = 22


def _rows_out(out: np.ndarray | None, n_rows: int, n_columns: int,
              dtype: np.dtype) -> np.ndarray:
    """``out``'s first ``n_rows`` rows, or a new array when no buffer is given."""
    if out is None:
        return np.empty((n_rows, n_columns), dtype=dtype)
    if out.ndim != 2 or out.shape[0] < n_rows or out.shape[1] != n_columns or \
            out.dtype != dtype or not out.flags.c_contiguous:
        raise ValueError(f"a buffer of at least ({n_rows}, {n_columns}) C-ordered {dtype} "
                         f"is needed, not {out.shape} {out.dtype}.")
    return out[:n_rows]


class NpyRows:
    """A C-ordered 2-D ``.npy`` file as a read-only array read by rows with ``pread``.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` file holding a 2-D, C-ordered array of a plain numeric dtype.

    Attributes
    ----------
    shape : (int, int)
    dtype : numpy.dtype
    offset : int
        Where the data start in the file.

    Raises
    ------
    ValueError
        If the file is not a ``.npy`` of a 2-D, C-ordered, numeric array, or is shorter than
        its header says (the message names the file).
    """

    ndim = 2

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        with open(self.path, "rb") as f:
            try:
                shape, fortran_order, dtype = read_npy_header(f)
            except ValueError as exc:
                raise ValueError(f"{self.path} is not a valid .npy file: {exc}") from None
            self.offset = f.tell()
            size = os.fstat(f.fileno()).st_size
        if len(shape) != 2 or fortran_order or dtype.hasobject or dtype.kind not in "biuf":
            raise ValueError(f"{self.path} holds a {'Fortran-ordered ' if fortran_order else ''}"
                             f"array of shape {shape} and dtype {dtype}; a row reader needs "
                             f"a 2-D, C-ordered, numeric array.")
        self.shape = (int(shape[0]), int(shape[1]))
        self.dtype = dtype
        self._row_bytes = self.shape[1] * dtype.itemsize
        if size < self.offset + self.shape[0] * self._row_bytes:
            raise ValueError(f"{self.path} is truncated: its header declares {self.shape} "
                             f"{dtype} ({self.shape[0] * self._row_bytes} bytes of data) but "
                             f"the file holds {size - self.offset}.")
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        self._array: np.ndarray | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"NpyRows({self.path!r}, shape={self.shape}, dtype={self.dtype})"

    def __reduce__(self) -> tuple:
        return (NpyRows, (self.path,))

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self._row_bytes

    def _file(self) -> int:
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY)
            return self._fd

    def __del__(self) -> None:
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)

    def _mapped(self) -> np.ndarray:
        """The whole array, mapped read-only (pages are released after use, see
        :meth:`take_columns`)."""
        with self._lock:
            if self._map is None:
                with open(self.path, "rb") as f:
                    self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                self._array = np.frombuffer(self._map, self.dtype, self.shape[0] * self.shape[1],
                                            self.offset).reshape(self.shape)
            return self._array

    def take_columns(self, start: int, stop: int, columns: np.ndarray,
                     out: np.ndarray) -> np.ndarray:
        """``X[start:stop][:, columns]`` into ``out`` (shape (stop - start, len(columns))).

        Gathered straight from the mapped file (no copy of the whole rows), then the block's
        pages are unmapped from this process (``MADV_DONTNEED``; they stay in the page cache),
        so resident memory stays at the block even when a whole view is read through.
        ``columns`` must be valid (non-negative, in range): they are not checked.
        """
        if not _CAN_RELEASE:
            out[...] = np.take(self.read(start, stop), columns, axis=1)
            return out
        rows = self._mapped()[start:stop]
        first = (self.offset + start * self._row_bytes) // mmap.PAGESIZE * mmap.PAGESIZE
        last = self.offset + stop * self._row_bytes
        with contextlib.suppress(OSError):  # an older kernel: the pages fault in one by one
            self._map.madvise(_MADV_POPULATE_READ, first, last - first)
        if out.dtype == rows.dtype:
            np.take(rows, columns, axis=1, out=out, mode="clip")
        else:  # (np.take into another dtype would cast what ``out`` held first)
            out[...] = np.take(rows, columns, axis=1, mode="clip")
        self._map.madvise(mmap.MADV_DONTNEED, first, last - first)
        return out

    def _read_into(self, out: np.ndarray, start: int) -> None:
        """Fill ``out`` (rows, n_features) with the rows from ``start`` on."""
        view = memoryview(out.reshape(-1).view(np.uint8))
        position, done = self.offset + start * self._row_bytes, 0
        fd = self._file()
        while done < len(view):
            n = os.preadv(fd, [view[done:]], position + done)
            if n == 0:
                raise ValueError(f"{self.path} ended while rows were read from it.")
            done += n

    def read(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Rows ``start:stop`` (bounds clipped as for a slice), into the first rows of ``out``
        if given (a buffer reused from block to block spares a new array's page faults)."""
        start, stop, _ = slice(start, stop).indices(self.shape[0])
        out = _rows_out(out, max(stop - start, 0), self.shape[1], self.dtype)
        if len(out):
            self._read_into(out, start)
        return out

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, tuple):
            rows, *rest = key
            return self[rows][(slice(None), *rest)]
        if isinstance(key, slice):
            if key.step not in (None, 1):
                return self.read(0, self.shape[0])[key]
            return self.read(key.start if key.start is not None else 0,
                             key.stop if key.stop is not None else self.shape[0])
        if isinstance(key, int | np.integer):
            index = int(key) + (self.shape[0] if key < 0 else 0)
            if not 0 <= index < self.shape[0]:
                raise IndexError(f"row {key} is out of range for {self.shape[0]} rows")
            return self.read(index, index + 1)[0]
        rows = np.asarray(key)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        return self._gather(rows.astype(np.int64).ravel())

    def _gather(self, rows: np.ndarray) -> np.ndarray:
        """Rows in the order given, each run of consecutive rows read with one call."""
        if rows.size and (rows.min() < -self.shape[0] or rows.max() >= self.shape[0]):
            raise IndexError(f"row index out of range for {self.shape[0]} rows")
        rows = np.where(rows < 0, rows + self.shape[0], rows)
        order = np.argsort(rows, kind="stable")
        sorted_rows = rows[order]
        out = np.empty((len(rows), self.shape[1]), dtype=self.dtype)
        breaks = np.flatnonzero(np.diff(sorted_rows) != 1) + 1
        sorted_out = np.empty_like(out)
        for run in np.split(np.arange(len(rows)), breaks):
            if len(run):
                self._read_into(sorted_out[run[0]:run[-1] + 1], int(sorted_rows[run[0]]))
        out[order] = sorted_out
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = self.read(0, self.shape[0])
        return whole if dtype is None else whole.astype(dtype, copy=False)


class StackedRows:
    """Several row readers (or arrays) with the same columns, one after the other."""

    ndim = 2

    def __init__(self, parts: Sequence[Any]) -> None:
        if not parts:
            raise ValueError("StackedRows needs at least one part.")
        self.parts = list(parts)
        widths = {p.shape[1] for p in self.parts}
        dtypes = {np.dtype(p.dtype) for p in self.parts}
        if len(widths) != 1 or len(dtypes) != 1:
            raise ValueError(f"Parts to stack differ in columns {sorted(widths)} or dtypes "
                             f"{sorted(map(str, dtypes))}.")
        self.dtype = dtypes.pop()
        self._bounds = np.cumsum([0] + [p.shape[0] for p in self.parts])
        self.shape = (int(self._bounds[-1]), widths.pop())

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    def _pieces(self, start: int, stop: int) -> Iterator[tuple[Any, slice, slice]]:
        """Each part rows ``start:stop`` fall in: the part, its rows, their place in a block."""
        for part, first, last in zip(self.parts, self._bounds[:-1], self._bounds[1:],
                                     strict=True):
            lo, hi = max(start, first), min(stop, last)
            if lo < hi:
                yield part, slice(lo - first, hi - first), slice(lo - start, hi - start)

    def read(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Rows ``start:stop``, into the first rows of ``out`` if given (as
        :meth:`NpyRows.read`)."""
        start, stop, _ = slice(start, stop).indices(self.shape[0])
        out = _rows_out(out, max(stop - start, 0), self.shape[1], self.dtype)
        for part, rows, block in self._pieces(start, stop):
            if hasattr(part, "read"):
                part.read(rows.start, rows.stop, out=out[block])
            else:
                out[block] = part[rows]
        return out

    def take_columns(self, start: int, stop: int, columns: np.ndarray,
                     out: np.ndarray) -> np.ndarray:
        """``X[start:stop][:, columns]`` into ``out`` (as :meth:`NpyRows.take_columns`)."""
        for part, rows, block in self._pieces(start, stop):
            if hasattr(part, "take_columns"):
                part.take_columns(rows.start, rows.stop, columns, out[block])
            else:
                out[block] = np.take(np.asarray(part[rows]), columns, axis=1)
        return out

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, tuple):
            rows, *rest = key
            return self[rows][(slice(None), *rest)]
        if isinstance(key, slice) and key.step in (None, 1):
            return self.read(key.start if key.start is not None else 0,
                             key.stop if key.stop is not None else self.shape[0])
        rows = np.arange(self.shape[0])[key]
        out = np.empty((np.size(rows), self.shape[1]), dtype=self.dtype)
        part_of = np.searchsorted(self._bounds, np.ravel(rows), side="right") - 1
        for p in np.unique(part_of):
            mine = part_of == p
            out[mine] = np.asarray(self.parts[p][np.ravel(rows)[mine] - self._bounds[p]])
        return out[0] if np.ndim(rows) == 0 else out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = self.read(0, self.shape[0])
        return whole if dtype is None else whole.astype(dtype, copy=False)


def row_blocks(X: Any, block_bytes: int = BLOCK_BYTES, reuse: bool = False
               ) -> Iterator[np.ndarray]:
    """Consecutive blocks of rows of an array or row reader, about ``block_bytes`` each.

    With ``reuse``, a row reader's blocks are read into one buffer: each block is valid only
    until the next is asked for (a new block-sized array per block costs its page faults).
    """
    row_bytes = max(1, X.shape[1] * np.dtype(X.dtype).itemsize)
    step = max(1, block_bytes // row_bytes)
    buffer = None
    if reuse and hasattr(X, "read") and not isinstance(X, np.ndarray):
        buffer = np.empty((min(step, X.shape[0]), X.shape[1]), dtype=X.dtype)
    for start in range(0, X.shape[0], step):
        if buffer is None:
            yield np.asarray(X[start:start + step])
        else:
            yield X.read(start, start + step, out=buffer)
