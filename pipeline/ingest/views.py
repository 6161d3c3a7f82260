"""Views stored one file per view (``.npy``, ``.npz``, ``.parquet``, ``.csv``) or as a folder."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

import fastmice
from pipeline.ingest import _common as common
from pipeline.ingest._checks import check_file
from pipeline.ingest._common import LayoutError, PathLike, ShapeHook, SparseOption, View
from pipeline.ingest.ids import numeric_matrix
from storage import write_file_atomic
from storage.rows import NpyRows

__all__ = ["load_views", "save_views_dir"]

_VIEW_FILE = re.compile(r"view(\d+)\.(npy|npz)")
_VIEW_FILE_SUFFIXES = (".npy", ".npz", ".parquet", ".csv")
_SPARSE_NPZ_KEYS = {"data", "indices", "indptr", "format", "shape"}


def _read_npz_view(p: Path) -> object:
    with np.load(p, allow_pickle=False) as z:
        files = set(z.files)
        if files >= _SPARSE_NPZ_KEYS:
            pass  # a scipy.sparse.save_npz file; read below once the archive is closed
        elif len(files) == 1:
            return z[next(iter(files))]
        else:
            raise LayoutError(
                f"{p} holds {len(files)} arrays ({sorted(files)}); a per-view .npz must hold "
                "one array or one scipy.sparse matrix. Use load_npz for the "
                "view0 ... view{V-1} layout."
            )
    return sp.load_npz(p)


def _read_parquet_view(p: Path) -> np.ndarray:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - pyarrow is an optional dependency
        raise ImportError(f"Reading {p} needs pyarrow (pip install pyarrow).") from exc
    return numeric_matrix(pq.read_table(p), p)


def _read_csv_view(p: Path) -> np.ndarray:
    with p.open() as fh:
        first = fh.readline()
    try:
        [float(tok) for tok in first.strip().split(",")]
        skip = 0
    except ValueError:
        skip = 1  # a header line
    try:
        return np.loadtxt(p, delimiter=",", skiprows=skip, ndmin=2, dtype=np.float64)
    except ValueError as exc:
        if skip:  # name the column that is not numeric
            import pyarrow.csv as pacsv

            try:
                numeric_matrix(pacsv.read_csv(p), p)
            except LayoutError as named:
                raise LayoutError(f"{p} is not a numeric CSV file: {named}") from exc
            except Exception:
                pass
        raise LayoutError(f"{p} is not a numeric CSV file: {exc}") from exc


def _read_npy(p: Path, mmap_mode: str | None) -> object:
    """A ``.npy`` view: with ``mmap_mode``, a 2-D float one stays on disk as a row reader."""
    if mmap_mode is not None:
        try:
            rows = NpyRows(p)
        except ValueError:
            pass  # not a plain 2-D C-ordered array: numpy reads it (and explains what it is)
        else:
            if rows.dtype in (np.float32, np.float64):
                return rows
    return np.load(p, allow_pickle=False, mmap_mode=mmap_mode)


def _read_array_file(p: Path, mmap_mode: str | None) -> object:
    suffix = p.suffix.lower()
    if suffix not in _VIEW_FILE_SUFFIXES:
        raise ValueError(
            f"Cannot read {p}: unknown extension {p.suffix!r}; expected one of "
            f"{', '.join(_VIEW_FILE_SUFFIXES)}."
        )
    check_file(p)  # refuse bytes that cannot be what the name says (empty, forged, pickled)
    try:
        if suffix == ".npy":
            return _read_npy(p, mmap_mode)
        if suffix == ".npz":
            return _read_npz_view(p)
        if suffix == ".parquet":
            return _read_parquet_view(p)
        return _read_csv_view(p)
    except (ImportError, LayoutError):
        raise
    except Exception as exc:  # pyarrow, zipfile and numpy raise many error types
        raise common.read_failed(p, exc) from exc


def _view_files_in(directory: Path) -> tuple[list[Path], Path | None]:
    found: dict[int, Path] = {}
    for f in directory.iterdir():
        m = _VIEW_FILE.fullmatch(f.name)
        if m is None:
            continue
        v = int(m[1])
        if v in found:
            raise ValueError(
                f"{directory} has two files for view {v}: {found[v].name} and {f.name}."
            )
        found[v] = f
    if not found:
        raise ValueError(f"{directory} has no view files (view0.npy / view0.npz, ...).")
    labels = directory / "labels.npy"
    return [found[v] for v in sorted(found)], labels if labels.is_file() else None


def load_views(
    paths: PathLike | Sequence[PathLike],
    *,
    labels: PathLike | None = None,
    sparse: SparseOption = "keep",
    mmap_mode: Literal["r", "c"] | None = None,
    on_shapes: ShapeHook | None = None,
) -> tuple[list[View], np.ndarray | None]:
    """Load views stored one file per view, or a directory of ``view*.npy|npz`` files.

    Parameters
    ----------
    paths : str, os.PathLike or sequence of them
        Either a directory holding ``view0.npy``, ``view1.npz``, ... (sorted by the
        integer after ``view``) and optionally ``labels.npy``; or one path per view:

        * ``.npy`` -- a 2-D array (read with ``allow_pickle=False``);
        * ``.npz`` -- one scipy.sparse matrix (``scipy.sparse.save_npz``) or one array;
        * ``.parquet`` -- its columns, in order, all numeric (a string column is refused:
          sample ids go through :func:`pipeline.ingest.ids.load_tables_with_ids`);
        * ``.csv`` -- comma-separated numbers, with an optional header line.
    labels : str or os.PathLike, optional
        A file with the labels (same formats; one column). Overrides ``labels.npy``
        of a directory.
    sparse : {"keep", "auto"} or bool, default="keep"
        Container of each view; see :mod:`pipeline.ingest`.
    mmap_mode : {"r", "c"}, optional
        Leave ``.npy`` views on disk instead of reading them: a 2-D, C-ordered
        ``float32``/``float64`` view becomes a row reader (:class:`storage.rows.NpyRows`,
        read a block of rows at a time where it is used); another ``.npy`` is
        memory-mapped (``numpy.load(mmap_mode=...)``).
    on_shapes : callable, optional
        ``on_shapes(n_samples, n_features, itemsize)``, called once the files are open and
        agree on the number of samples, before their values are checked (a view on disk is
        then not read yet): e.g. to refuse a run that would not fit in memory first.

    Returns
    -------
    Xs : list of ndarray or scipy.sparse.csr_matrix, each of shape (n_samples, n_features_v)
        The views.
    labels : ndarray of shape (n_samples,) or None
        The labels, or ``None``.

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    ValueError
        For an unreadable file, an unknown extension, a directory without view files, or
        views that fail :func:`fastmice.check_views` (not 2-D, different numbers of rows...:
        the message names the file).

    See Also
    --------
    save_views_dir : writes the directory layout.
    """
    common.check_sparse_option(sparse)
    if mmap_mode not in (None, "r", "c"):
        raise ValueError(f"mmap_mode={mmap_mode!r} is not valid; expected None, 'r' or 'c'.")
    files, label_file = _view_paths(paths, labels)
    names = [f.name for f in files]
    if len(set(names)) < len(names):
        names = [str(f) for f in files]
    raw = [_read_array_file(f, mmap_mode) for f in files]
    common.announce_shapes(raw, on_shapes)
    Xs = common.to_views(raw, names, sparse)
    y = None if label_file is None else _read_labels(label_file)
    common.check_labels(y, Xs, names[0])
    return Xs, y


def _view_paths(paths: PathLike | Sequence[PathLike],
                labels: PathLike | None) -> tuple[list[Path], Path | None]:
    """The view files (a directory's, in view order) and the labels file, all existing."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    elif not isinstance(paths, Sequence):
        raise TypeError(
            "paths must be a directory, a file, or a sequence of files; "
            f"got {type(paths).__name__}."
        )
    elif not paths:
        raise ValueError("paths is empty; pass a directory or at least one file.")
    files = [Path(p) for p in paths]
    label_file = None if labels is None else common.existing_file(labels)
    if len(files) == 1 and files[0].is_dir():
        files, dir_labels = _view_files_in(files[0])
        return files, label_file or dir_labels
    for f in files:
        if f.is_dir():
            raise ValueError(f"{f} is a directory; pass a directory alone, not among files.")
        common.existing_file(f)
    return files, label_file


def _read_labels(label_file: Path) -> np.ndarray:
    raw = _read_array_file(label_file, None)
    if sp.issparse(raw) or (np.ndim(raw) == 2 and np.shape(raw)[1] != 1) or np.ndim(raw) > 2:
        raise ValueError(
            f"{label_file} must hold one column of labels; got shape {np.shape(raw)}."
        )
    return common.to_labels(raw, str(label_file))


def save_views_dir(
    path: PathLike,
    Xs: Sequence[ArrayLike | sp.spmatrix | sp.sparray],
    labels: ArrayLike | None = None,
    *,
    overwrite: bool = False,
) -> Path:
    """Write views to a directory as ``view{i}.npy`` (dense) or ``view{i}.npz`` (sparse).

    The views are written as :func:`fastmice.check_views` returns them (float32 stays
    float32, other numeric dtypes become float64; sparse views CSR, written with
    ``scipy.sparse.save_npz(..., compressed=False)``). ``labels`` go to ``labels.npy``. Each
    file is written with :func:`storage.write_file_atomic`, so a reader never sees half a
    file. :func:`load_views` reads the directory back.

    Parameters
    ----------
    path : str or os.PathLike
        The directory; created if missing (with parents).
    Xs : sequence of array-like or sparse matrices, each of shape (n_samples, n_features_v)
        The views.
    labels : array-like of shape (n_samples,), optional
        Ground-truth labels.
    overwrite : bool, default=False
        Replace existing ``view*.npy|npz`` / ``labels.npy`` files in ``path`` (all of
        them are removed first, so no stale view survives). Without it, existing view or
        label files raise ``FileExistsError``.

    Returns
    -------
    pathlib.Path
        The directory.

    Raises
    ------
    ValueError, TypeError
        If a view fails :func:`fastmice.check_views`, or the labels do not match the rows.
    FileExistsError
        If the directory already holds view or label files and ``overwrite`` is False.
    """
    views = fastmice.check_views(Xs)
    y = None if labels is None else np.asarray(labels).reshape(-1)
    common.check_labels(y, views, "view 0")

    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    existing = [
        f for f in directory.iterdir() if _VIEW_FILE.fullmatch(f.name) or f.name == "labels.npy"
    ]
    if existing and not overwrite:
        raise FileExistsError(
            f"{directory} already holds {sorted(f.name for f in existing)}; pass overwrite=True "
            "to replace them."
        )
    for f in existing:
        f.unlink()

    for v, X in enumerate(views):
        if sp.issparse(X):
            write_file_atomic(directory / f"view{v}.npz",
                              lambda fh, X=X: sp.save_npz(fh, X, compressed=False))
        else:
            write_file_atomic(directory / f"view{v}.npy",
                              lambda fh, X=X: np.save(fh, X, allow_pickle=False))
    if y is not None:
        write_file_atomic(directory / "labels.npy", lambda fh: np.save(fh, y, allow_pickle=False))
    return directory
