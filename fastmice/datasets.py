"""Load multi-view data from files, and generate synthetic multi-view data.

This is the only module of :mod:`fastmice` that touches the file system. Every loader
returns ``(Xs, labels)``: ``Xs`` is a list of views, each an array of shape
(n_samples, n_features_v) -- a dense ``float64`` or ``float32`` :class:`numpy.ndarray`
or a :class:`scipy.sparse.csr_matrix` -- and ``labels`` is an array of shape
(n_samples,) or ``None`` when the file holds no ground truth.

Loaders
-------
* :func:`load_npz` -- one ``.npz`` with ``view0 ... view{V-1}`` and optional ``labels``
  (the layout of the shared benchmarks);
* :func:`load_mat` -- the ``.mat`` layouts common among multi-view benchmarks;
* :func:`load_views` -- one file per view (``.npy``, ``.npz``, ``.parquet``, ``.csv``), or
  a directory of ``view*.npy`` / ``view*.npz`` files (what :func:`save_views_dir` writes);
* :func:`load_dataset` / :func:`available_datasets` -- the shared benchmarks by name.

The ``sparse`` option of the loaders chooses each view's container:

* ``"auto"`` -- CSR when the view's density ``nnz / (n_samples * n_features)`` is below
  0.1 (text and graph views, as a user would hand them in), dense otherwise;
* ``True`` / ``False`` -- every view CSR / every view dense;
* ``"keep"`` -- as stored in the file.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, Literal, TypeAlias

import numpy as np
import scipy.io
import scipy.sparse as sp
from numpy.typing import ArrayLike, DTypeLike

__all__ = [
    "DENSITY_THRESHOLD",
    "available_datasets",
    "load_dataset",
    "load_mat",
    "load_npz",
    "load_views",
    "make_multiview_blobs",
    "save_views_dir",
]

View: TypeAlias = np.ndarray | sp.csr_matrix
SparseOption: TypeAlias = bool | Literal["auto", "keep"]
PathLike: TypeAlias = str | os.PathLike

#: Views whose density ``nnz / (n_samples * n_features)`` is below this are returned as
#: CSR under ``sparse="auto"``.
DENSITY_THRESHOLD = 0.1

_VIEW_KEY = re.compile(r"view(\d+)")
_VIEW_FILE = re.compile(r"view(\d+)\.(npy|npz)")
_MAT_VIEW_NAMES = ("X", "fea", "data")
_MAT_LABEL_NAMES = ("Y", "y", "gt", "truth", "labels", "label", "gnd", "truelabel")
_VIEW_FILE_SUFFIXES = (".npy", ".npz", ".parquet", ".csv")
_SPARSE_NPZ_KEYS = {"data", "indices", "indptr", "format", "shape"}


# ---------------------------------------------------------------------------- helpers


def _check_sparse_option(sparse: SparseOption) -> None:
    if not (isinstance(sparse, bool) or sparse in ("auto", "keep")):
        raise ValueError(f"sparse={sparse!r} is not valid; expected 'auto', 'keep', True or False.")


def _existing_file(path: PathLike, what: str = "file") -> Path:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"Expected a path (str or os.PathLike); got {type(path).__name__}.")
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"No such {what}: {p}")
    if p.is_dir():
        raise ValueError(f"Expected a {what}, got a directory: {p}")
    return p


def _to_view(X: object, name: str, sparse: SparseOption) -> View:
    """Return ``X`` as a 2-D float view (dense float32/float64 or CSR) per ``sparse``."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if X.dtype not in (np.float32, np.float64):
            if X.dtype.kind not in "biuf":
                raise TypeError(f"{name} must be numeric; got dtype {X.dtype}.")
            X = X.astype(np.float64)
    else:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be numeric; got dtype {X.dtype}.")
        if X.ndim != 2:
            raise ValueError(
                f"{name} must be a 2-D array (n_samples, n_features); got shape {X.shape}."
            )
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
    if sparse == "keep":
        make_sparse = sp.issparse(X)
    elif sparse == "auto":
        nnz = X.nnz if sp.issparse(X) else np.count_nonzero(X)
        make_sparse = nnz < DENSITY_THRESHOLD * max(X.shape[0] * X.shape[1], 1)
    else:
        make_sparse = bool(sparse)
    if make_sparse:
        return X if sp.issparse(X) else sp.csr_matrix(X)
    return X.toarray() if sp.issparse(X) else np.ascontiguousarray(X)


def _to_labels(y: object, name: str) -> np.ndarray:
    """Flatten labels; integer-valued floats (MATLAB doubles) become int64."""
    y = np.asarray(y).reshape(-1)
    if y.dtype.kind in "biu":
        return y.astype(np.int64, copy=False)
    if y.dtype.kind == "f":
        if np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            return y.astype(np.int64)
        return y
    if y.dtype.kind in "US":
        return y
    raise TypeError(f"{name} must hold integer or string labels; got dtype {y.dtype}.")


def _check_n_rows(Xs: list[View], names: list[str], labels: np.ndarray | None) -> None:
    counts = [X.shape[0] for X in Xs]
    if len(set(counts)) > 1:
        listing = ", ".join(f"{n} has {c}" for n, c in zip(names, counts, strict=True))
        raise ValueError(f"Views have different numbers of rows (samples): {listing}.")
    if labels is not None and counts and labels.shape[0] != counts[0]:
        raise ValueError(
            f"labels have {labels.shape[0]} entries but the views have {counts[0]} rows "
            f"({names[0]})."
        )


class _LayoutError(ValueError):
    """A readable file whose content has the wrong layout (raised as is, never wrapped)."""


def _read_failed(path: Path, exc: BaseException) -> ValueError:
    return ValueError(f"Could not read {path}: {type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------------- npz


def load_npz(
    path: PathLike, *, sparse: SparseOption = "auto"
) -> tuple[list[View], np.ndarray | None]:
    """Load a multi-view ``.npz`` file holding ``view0 ... view{V-1}`` and optional ``labels``.

    This is the layout of the shared benchmarks (``../shared/datasets/INDEX.md``): each
    ``view{v}`` an array of shape (n_samples, n_features_v), ``labels`` of shape
    (n_samples,). The file is read with ``allow_pickle=False``.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npz`` file.
    sparse : {"auto", "keep"} or bool, default="auto"
        Container of each view: ``"auto"`` returns views with density below
        :data:`DENSITY_THRESHOLD` (0.1) as CSR and the others dense; ``True`` / ``False``
        force CSR / dense; ``"keep"`` keeps the stored (dense) arrays.

    Returns
    -------
    Xs : list of ndarray or scipy.sparse.csr_matrix, each of shape (n_samples, n_features_v)
        The views. Dense views are ``float64``, or ``float32`` if stored as ``float32``.
    labels : ndarray of shape (n_samples,) or None
        The ``labels`` array (integers as ``int64``), or ``None`` if absent.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not a readable ``.npz``, has no ``view0``, has a gap in the view
        numbering, or its views and labels disagree on the number of samples.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from fastmice.datasets import load_npz
    >>> path = os.path.join(tempfile.mkdtemp(), "toy.npz")
    >>> np.savez(path, view0=np.ones((4, 2)), view1=np.eye(4, 50), labels=[0, 0, 1, 1])
    >>> Xs, y = load_npz(path)
    >>> [type(X).__name__ for X in Xs], y.tolist()
    (['ndarray', 'csr_matrix'], [0, 0, 1, 1])
    """
    _check_sparse_option(sparse)
    p = _existing_file(path)
    try:
        z = np.load(p, allow_pickle=False)
    except Exception as exc:  # numpy and zipfile raise many error types
        raise _read_failed(p, exc) from exc
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{p} holds a single array, not an .npz archive of views.")
    with z:
        files = list(z.files)
        indices = sorted(int(m[1]) for k in files if (m := _VIEW_KEY.fullmatch(k)))
        if not indices:
            hint = (
                " It looks like one scipy.sparse matrix (scipy.sparse.save_npz); load it "
                "with load_views([path])."
                if set(files) >= _SPARSE_NPZ_KEYS
                else ""
            )
            raise ValueError(f"{p} has no arrays named view0, view1, ...; found {files}.{hint}")
        if indices != list(range(len(indices))):
            raise ValueError(
                f"{p} must hold view0 ... view{len(indices) - 1} without gaps; "
                f"found views {indices}."
            )
        try:
            raw = [z[f"view{v}"] for v in indices]
            raw_labels = z["labels"] if "labels" in files else None
        except Exception as exc:  # corrupt member, pickled object array, ...
            raise _read_failed(p, exc) from exc
    labels = None if raw_labels is None else _to_labels(raw_labels, f"labels in {p}")
    Xs = [_to_view(X, f"view{v} in {p}", sparse) for v, X in enumerate(raw)]
    _check_n_rows(Xs, [f"view{v}" for v in range(len(Xs))], labels)
    return Xs, labels


# ---------------------------------------------------------------------------- mat


def _mat_pick(contents: dict, names: Sequence[str]) -> tuple[str, object] | None:
    for name in names:
        if name in contents:
            return name, contents[name]
    lower = {k.lower(): k for k in contents}
    for name in names:
        if name.lower() in lower:
            key = lower[name.lower()]
            return key, contents[key]
    return None


def _mat_views(value: object, var: str, p: Path) -> list[object]:
    if isinstance(value, np.ndarray) and value.dtype == object:
        if value.ndim > 2 or (value.ndim == 2 and min(value.shape) > 1):
            raise ValueError(
                f"Variable {var!r} in {p} is a cell array of shape {value.shape}; expected "
                "1 x V or V x 1 (one cell per view)."
            )
        cells = list(value.reshape(-1))
        if not cells:
            raise ValueError(f"Variable {var!r} in {p} is an empty cell array.")
        return cells
    if sp.issparse(value) or (isinstance(value, np.ndarray) and value.ndim == 2):
        return [value]  # a single numeric matrix: a one-view data set
    raise ValueError(
        f"Variable {var!r} in {p} is neither a cell array of views nor a 2-D matrix "
        f"({type(value).__name__})."
    )


def _orient(raw: list[object], n_labels: int | None, p: Path) -> list[object]:
    """Transpose views stored d x N, judging by the label count or the shared dimension."""
    shapes = []
    for v, X in enumerate(raw):
        shape = getattr(X, "shape", ())
        if len(shape) != 2:
            raise ValueError(f"View {v} in {p} must be a 2-D matrix; got shape {shape}.")
        shapes.append(shape)
    if n_labels is not None:
        n = n_labels
    else:
        common = set(shapes[0]).intersection(*(set(s) for s in shapes[1:]))
        if not common:
            raise ValueError(
                f"The views in {p} share no dimension, so the number of samples is unknown; "
                f"view shapes: {shapes}."
            )
        if len(common) == 1:
            n = common.pop()
        elif len({s[0] for s in shapes}) == 1:
            n = shapes[0][0]
        elif len({s[1] for s in shapes}) == 1:
            n = shapes[0][1]
        else:
            raise ValueError(
                f"Cannot tell samples from features in {p} (view shapes {shapes}) and the "
                "file has no labels; store the views as N x d."
            )
    out = []
    for v, (X, shape) in enumerate(zip(raw, shapes, strict=True)):
        if shape[0] == n:
            out.append(X)
        elif shape[1] == n:
            out.append(X.T)
        else:
            raise ValueError(
                f"View {v} in {p} has shape {shape}; neither dimension equals the number "
                f"of samples {n}" + (" (the number of labels)." if n_labels is not None else ".")
            )
    return out


def load_mat(
    path: PathLike, *, sparse: SparseOption = "keep"
) -> tuple[list[View], np.ndarray | None]:
    """Load a multi-view MATLAB ``.mat`` file (format v4 to v7).

    Recognised layouts (the common ones among public multi-view benchmarks):

    * views: a cell array named ``X``, ``fea`` or ``data`` (1 x V or V x 1), one matrix
      per cell, dense or sparse; a plain 2-D matrix under one of these names is a
      one-view data set;
    * labels (optional): ``Y``, ``y``, ``gt``, ``truth``, ``labels``, ``label``, ``gnd``
      or ``truelabel``, any shape, flattened (a cell array of label vectors, as in
      ``truelabel``, uses its first cell).

    Exact names are tried first, then the same names ignoring case. Views stored
    features x samples (d x N) are transposed: the sample dimension is the one equal to
    the number of labels or, without labels, the dimension all views share.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.mat`` file.
    sparse : {"keep", "auto"} or bool, default="keep"
        ``"keep"`` returns sparse MATLAB matrices as CSR and dense ones dense; see the
        module docstring for ``"auto"``, ``True`` and ``False``.

    Returns
    -------
    Xs : list of ndarray or scipy.sparse.csr_matrix, each of shape (n_samples, n_features_v)
        The views, ``float64`` (``float32`` if stored as single), C-contiguous.
    labels : ndarray of shape (n_samples,) or None
        Integer-valued labels as ``int64`` (values unchanged, e.g. 1..k), or ``None``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is MATLAB v7.3 (HDF5; scipy cannot read it), is not a .mat file, has
        no recognised view variable, or its shapes cannot be matched to one sample count.
    """
    _check_sparse_option(sparse)
    p = _existing_file(path)
    try:
        major, _ = scipy.io.matlab.matfile_version(p)
    except Exception as exc:  # scipy raises several private error types here
        raise ValueError(f"{p} is not a readable MATLAB .mat file: {exc}") from exc
    if major == 2:
        raise ValueError(
            f"{p} is a MATLAB v7.3 (HDF5) file, which scipy.io.loadmat cannot read (and "
            "fastmice does not depend on h5py). Re-save it in MATLAB/Octave with "
            "save(file, '-v7'), or read the views with h5py and pass the arrays directly."
        )
    try:
        contents = {k: v for k, v in scipy.io.loadmat(p).items() if not k.startswith("__")}
    except Exception as exc:
        raise _read_failed(p, exc) from exc

    found = _mat_pick(contents, _MAT_VIEW_NAMES)
    if found is None:
        raise ValueError(
            f"{p} has no view variable named {' / '.join(_MAT_VIEW_NAMES)}; it holds "
            f"{sorted(contents)}."
        )
    var, value = found
    raw = _mat_views(value, var, p)

    labels = None
    found_labels = _mat_pick(contents, _MAT_LABEL_NAMES)
    if found_labels is not None:
        lvar, lvalue = found_labels
        if isinstance(lvalue, np.ndarray) and lvalue.dtype == object:
            if lvalue.size == 0:
                raise ValueError(f"Label variable {lvar!r} in {p} is an empty cell array.")
            lvalue = lvalue.reshape(-1)[0]
        if sp.issparse(lvalue):
            lvalue = lvalue.toarray()
        labels = _to_labels(lvalue, f"label variable {lvar!r} in {p}")

    raw = _orient(raw, None if labels is None else labels.shape[0], p)
    Xs = [_to_view(X, f"view {v} ({var}) in {p}", sparse) for v, X in enumerate(raw)]
    return Xs, labels


# ---------------------------------------------------------------------------- per-view files


def _read_npz_view(p: Path) -> object:
    with np.load(p, allow_pickle=False) as z:
        files = set(z.files)
        if files >= _SPARSE_NPZ_KEYS:
            pass  # a scipy.sparse.save_npz file; read below once the archive is closed
        elif len(files) == 1:
            return z[next(iter(files))]
        else:
            raise _LayoutError(
                f"{p} holds {len(files)} arrays ({sorted(files)}); a per-view .npz must hold "
                "one array or one scipy.sparse matrix. Use load_npz for the "
                "view0 ... view{V-1} layout."
            )
    return sp.load_npz(p)


def _read_parquet_view(p: Path) -> np.ndarray:
    try:
        import pyarrow.parquet as pq
        import pyarrow.types as pat
    except ImportError as exc:  # pragma: no cover - pyarrow is an optional dependency
        raise ImportError(f"Reading {p} needs pyarrow (pip install pyarrow).") from exc
    table = pq.read_table(p)
    numeric = [
        f.name
        for f in table.schema
        if pat.is_integer(f.type) or pat.is_floating(f.type) or pat.is_boolean(f.type)
    ]
    if not numeric:
        raise _LayoutError(f"{p} has no numeric columns; its columns are {table.column_names}.")
    columns = []
    for name in numeric:
        col = table.column(name)
        if col.null_count:
            raise _LayoutError(f"Column {name!r} of {p} has {col.null_count} missing values.")
        columns.append(col.to_numpy())
    dtype = np.result_type(*columns)
    if dtype not in (np.float32, np.float64):
        dtype = np.float64
    X = np.empty((table.num_rows, len(columns)), dtype=dtype)
    for j, col in enumerate(columns):
        X[:, j] = col
    return X


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
        raise _LayoutError(f"{p} is not a numeric CSV file: {exc}") from exc


def _read_array_file(p: Path, mmap_mode: str | None) -> object:
    suffix = p.suffix.lower()
    if suffix not in _VIEW_FILE_SUFFIXES:
        raise ValueError(
            f"Cannot read {p}: unknown extension {p.suffix!r}; expected one of "
            f"{', '.join(_VIEW_FILE_SUFFIXES)}."
        )
    try:
        if suffix == ".npy":
            return np.load(p, allow_pickle=False, mmap_mode=mmap_mode)
        if suffix == ".npz":
            return _read_npz_view(p)
        if suffix == ".parquet":
            return _read_parquet_view(p)
        return _read_csv_view(p)
    except (ImportError, _LayoutError):
        raise
    except Exception as exc:  # pyarrow, zipfile and numpy raise many error types
        raise _read_failed(p, exc) from exc


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
) -> tuple[list[View], np.ndarray | None]:
    """Load views stored one file per view, or a directory of ``view*.npy|npz`` files.

    Parameters
    ----------
    paths : str, os.PathLike or sequence of them
        Either a directory holding ``view0.npy``, ``view1.npz``, ... (sorted by the
        integer after ``view``) and optionally ``labels.npy``; or one path per view:

        * ``.npy`` -- a 2-D array (read with ``allow_pickle=False``);
        * ``.npz`` -- one scipy.sparse matrix (``scipy.sparse.save_npz``) or one array;
        * ``.parquet`` -- all numeric columns, in order (needs pyarrow);
        * ``.csv`` -- comma-separated numbers, with an optional header line.
    labels : str or os.PathLike, optional
        A file with the labels (same formats; one column). Overrides ``labels.npy``
        of a directory.
    sparse : {"keep", "auto"} or bool, default="keep"
        Container of each view; see the module docstring.
    mmap_mode : {"r", "c"}, optional
        Memory-map ``.npy`` views (``numpy.load(mmap_mode=...)``) instead of reading
        them; dense ``float32``/``float64`` views then stay on disk until used.

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
        For an unreadable file, an unknown extension, a file that is not a 2-D array, a
        directory without view files, or views with different numbers of rows (the
        message names each file and its row count).

    See Also
    --------
    save_views_dir : writes the directory layout.
    """
    _check_sparse_option(sparse)
    if mmap_mode not in (None, "r", "c"):
        raise ValueError(f"mmap_mode={mmap_mode!r} is not valid; expected None, 'r' or 'c'.")
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
    label_file = None if labels is None else _existing_file(labels)
    if len(files) == 1 and files[0].is_dir():
        files, dir_labels = _view_files_in(files[0])
        label_file = label_file or dir_labels
    else:
        for f in files:
            if f.is_dir():
                raise ValueError(f"{f} is a directory; pass a directory alone, not among files.")
            _existing_file(f)

    Xs = []
    for f in files:
        X = _read_array_file(f, mmap_mode)
        if not sp.issparse(X) and np.ndim(X) != 2:
            raise ValueError(
                f"{f} must hold a 2-D array (n_samples, n_features); got shape {np.shape(X)}."
            )
        Xs.append(_to_view(X, str(f), sparse))
    y = None
    if label_file is not None:
        raw = _read_array_file(label_file, None)
        if sp.issparse(raw) or (np.ndim(raw) == 2 and np.shape(raw)[1] != 1) or np.ndim(raw) > 2:
            raise ValueError(
                f"{label_file} must hold one column of labels; got shape {np.shape(raw)}."
            )
        y = _to_labels(raw, str(label_file))
    names = [f.name for f in files]
    if len(set(names)) < len(names):
        names = [str(f) for f in files]
    _check_n_rows(Xs, names, y)
    return Xs, y


def save_views_dir(
    path: PathLike,
    Xs: Sequence[ArrayLike | sp.spmatrix | sp.sparray],
    labels: ArrayLike | None = None,
    *,
    overwrite: bool = False,
) -> Path:
    """Write views to a directory as ``view{i}.npy`` (dense) or ``view{i}.npz`` (sparse).

    Sparse views are written with ``scipy.sparse.save_npz(..., compressed=False)`` as
    CSR; dense views keep their dtype. ``labels`` go to ``labels.npy``. Each file is
    written to a temporary name and then renamed, so a reader never sees half a file.
    :func:`load_views` reads the directory back.

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
    ValueError
        If ``Xs`` is empty, a view is not 2-D, or row counts differ.
    FileExistsError
        If the directory already holds view or label files and ``overwrite`` is False.
    """
    if not isinstance(Xs, Sequence) or isinstance(Xs, np.ndarray) or len(Xs) == 0:
        raise ValueError("Xs must be a non-empty list of views.")
    views = [sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X) for X in Xs]
    for v, X in enumerate(views):
        if X.ndim != 2:
            raise ValueError(f"View {v} must be 2-D (n_samples, n_features); got {X.shape}.")
    y = None if labels is None else np.asarray(labels).reshape(-1)
    _check_n_rows(views, [f"view {v}" for v in range(len(views))], y)

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

    def _write(name: str, writer: Callable[[BinaryIO], object]) -> None:
        tmp = directory / f".{name}.tmp"
        with tmp.open("wb") as fh:
            writer(fh)
        os.replace(tmp, directory / name)

    for v, X in enumerate(views):
        if sp.issparse(X):
            _write(f"view{v}.npz", lambda fh, X=X: sp.save_npz(fh, X, compressed=False))
        else:
            _write(f"view{v}.npy", lambda fh, X=X: np.save(fh, X, allow_pickle=False))
    if y is not None:
        _write("labels.npy", lambda fh: np.save(fh, y, allow_pickle=False))
    return directory


# ---------------------------------------------------------------------------- shared benchmarks


def _datasets_root(root: PathLike | None) -> Path:
    if root is not None:
        return Path(root)
    env = os.environ.get("FASTMICE_DATASETS")
    if env:
        return Path(env)
    # <repo>/fastmice/datasets.py -> <repo>/../shared/datasets
    return Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def available_datasets(root: PathLike | None = None) -> list[str]:
    """Names of the benchmark data sets (``<name>.npz`` files) in ``root``.

    Parameters
    ----------
    root : str or os.PathLike, optional
        The folder. Default: the environment variable ``FASTMICE_DATASETS`` if set,
        otherwise ``../shared/datasets`` next to the fastmice checkout.

    Returns
    -------
    list of str
        Sorted names (case-insensitively); empty if the folder does not exist.
    """
    folder = _datasets_root(root)
    if not folder.is_dir():
        return []
    return sorted((f.stem for f in folder.glob("*.npz") if f.is_file()), key=str.lower)


def load_dataset(
    name: str, root: PathLike | None = None, *, sparse: SparseOption = "auto"
) -> tuple[list[View], np.ndarray | None]:
    """Load a shared benchmark data set by name.

    Parameters
    ----------
    name : str
        Data set name, e.g. ``"MSRCv1"`` (the file ``<root>/<name>.npz``); matched
        case-insensitively if there is no exact match.
    root : str or os.PathLike, optional
        The folder; see :func:`available_datasets`.
    sparse : {"auto", "keep"} or bool, default="auto"
        See :func:`load_npz`: by default the sparse text/graph views come back as CSR.

    Returns
    -------
    Xs : list of ndarray or scipy.sparse.csr_matrix, each of shape (n_samples, n_features_v)
        The views.
    labels : ndarray of shape (n_samples,) or None
        Ground-truth classes ``0..k-1``.

    Raises
    ------
    FileNotFoundError
        If the folder does not exist.
    ValueError
        If no data set of that name exists (the message lists the available ones).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str; got {type(name).__name__}.")
    folder = _datasets_root(root)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"Dataset folder {folder} does not exist; pass root= or set FASTMICE_DATASETS."
        )
    names = available_datasets(folder)
    if name not in names:
        matches = [n for n in names if n.lower() == name.lower()]
        if len(matches) != 1:
            raise ValueError(
                f"Unknown dataset {name!r} in {folder}; available: {', '.join(names) or 'none'}."
            )
        name = matches[0]
    return load_npz(folder / f"{name}.npz", sparse=sparse)


# ---------------------------------------------------------------------------- synthetic


def _seed_sequence(random_state: object) -> np.random.SeedSequence:
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(2**63)))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(np.iinfo(np.int32).max)))
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state={random_state} must be a non-negative integer.")
        return np.random.SeedSequence(int(random_state))
    raise TypeError(
        "random_state must be None, an int, a numpy Generator or RandomState; got "
        f"{type(random_state).__name__}."
    )


def make_multiview_blobs(
    n_samples: int = 1000,
    n_views: int = 3,
    n_clusters: int = 5,
    n_features: int | Sequence[int] | None = None,
    *,
    noise: float | Sequence[float] | None = None,
    separation: float = 6.0,
    random_state: int | np.random.Generator | np.random.RandomState | None = None,
    dtype: DTypeLike = np.float64,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Generate multi-view Gaussian blobs whose views differ in informativeness.

    Every view sees the same clusters, each through its own random geometry. In view
    ``v`` with ``d_v`` features the ``n_clusters`` centres lie in a random
    ``min(n_clusters, d_v)``-dimensional subspace, at pairwise distance ``separation``
    (exactly, as corners of a regular simplex, when ``d_v >= n_clusters``; on average,
    as Gaussian draws, otherwise). A sample is its centre plus Gaussian noise of
    standard deviation ``noise[v]`` along each axis of that subspace, plus
    ``0.1 * noise[v]`` on every feature, plus a random per-view offset. By default the
    last view is twice as noisy as the others: the weaker view.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples; cluster sizes differ by at most one.
    n_views : int, default=3
        Number of views.
    n_clusters : int, default=5
        Number of clusters (``1 <= n_clusters <= n_samples``).
    n_features : int or sequence of int, optional
        Features per view (one int for all views, or one per view). Default:
        ``10 * (v + 2)`` for view ``v``, i.e. ``(20, 30, 40)`` for three views.
    noise : float or sequence of float, optional
        Noise standard deviation per view (one float for all, or one per view), in the
        units of ``separation``. Default: 1.0 for every view but the last, 2.0 for the
        last (when ``n_views > 1``).
    separation : float, default=6.0
        Distance between cluster centres. With the default noise, two clusters overlap
        by ``Phi(-separation / (2 * noise))``: 0.13% in the strong views, 6.7% in the
        weak one.
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None
        Seed. The same value gives the same data for the same arguments. View ``v``
        depends only on the seed, ``n_samples``, ``n_clusters`` and its own
        ``n_features[v]`` and ``noise[v]``: adding a view with explicit ``noise`` leaves
        the earlier views unchanged.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of the views. ``float32`` data are generated in ``float32`` (not rounded
        from ``float64``), so they differ from the ``float64`` data of the same seed.

    Returns
    -------
    Xs : list of ndarray, each of shape (n_samples, n_features[v])
        The views, C-contiguous, of ``dtype``.
    y : ndarray of shape (n_samples,)
        Cluster labels ``0..n_clusters-1``, ``int64``.

    Raises
    ------
    ValueError
        For a non-positive count, ``n_clusters > n_samples``, a ``n_features`` or
        ``noise`` sequence whose length is not ``n_views``, negative noise, or an
        unsupported dtype.

    Notes
    -----
    Memory is the output plus O(n_samples * n_clusters): the per-feature noise is drawn
    in place and the structured part is added in row chunks. Four views of
    100,000 x (944, 576, 512, 640) in ``float32`` take 1.07 GB and about 7 s (2 busy cores).

    Examples
    --------
    >>> from fastmice.datasets import make_multiview_blobs
    >>> Xs, y = make_multiview_blobs(n_samples=60, n_clusters=3, random_state=0)
    >>> [X.shape for X in Xs], y.shape
    ([(60, 20), (60, 30), (60, 40)], (60,))
    """
    for pname, value in (
        ("n_samples", n_samples),
        ("n_views", n_views),
        ("n_clusters", n_clusters),
    ):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{pname}={value!r} must be a positive integer.")
    if n_clusters > n_samples:
        raise ValueError(f"n_clusters={n_clusters} must be <= n_samples={n_samples}.")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype={dtype} is not supported; expected float32 or float64.")
    if not np.isfinite(separation) or separation < 0:
        raise ValueError(f"separation={separation!r} must be a finite number >= 0.")

    if n_features is None:
        dims = [10 * (v + 2) for v in range(n_views)]
    elif isinstance(n_features, int | np.integer):
        dims = [int(n_features)] * n_views
    else:
        dims = [int(d) for d in n_features]
    if len(dims) != n_views or min(dims) < 1:
        raise ValueError(
            f"n_features={n_features!r} must be a positive int or {n_views} positive ints "
            f"(one per view, n_views={n_views})."
        )
    if noise is None:
        sigmas = [1.0] * n_views
        if n_views > 1:
            sigmas[-1] = 2.0
    elif isinstance(noise, int | float | np.number):
        sigmas = [float(noise)] * n_views
    else:
        sigmas = [float(s) for s in noise]
    if len(sigmas) != n_views or not all(math.isfinite(s) and s >= 0 for s in sigmas):
        raise ValueError(
            f"noise={noise!r} must be a number >= 0 or {n_views} of them (one per view)."
        )

    labels_seq, *view_seqs = _seed_sequence(random_state).spawn(n_views + 1)
    y = np.arange(n_samples, dtype=np.int64) % n_clusters
    np.random.default_rng(labels_seq).shuffle(y)

    chunk = max(1, 2**22 // max(dims))  # ~16-32 MB of structured signal per chunk
    Xs = []
    for d, sigma, seq in zip(dims, sigmas, view_seqs, strict=True):
        rng = np.random.default_rng(seq)
        r = min(n_clusters, d)
        if r == n_clusters:
            centres = np.eye(n_clusters) * (separation / math.sqrt(2.0))
        else:
            centres = rng.standard_normal((n_clusters, r)) * (separation / math.sqrt(2.0 * r))
        basis, _ = np.linalg.qr(rng.standard_normal((d, r)))  # (d, r), orthonormal columns
        offset = rng.standard_normal(d)
        latent = centres[y] + sigma * rng.standard_normal((n_samples, r))  # (n, r)
        X = np.empty((n_samples, d), dtype=dtype)
        rng.standard_normal(dtype=dtype, out=X)
        X *= dtype.type(0.1 * sigma)
        basis_t = basis.T.astype(dtype)
        offset = offset.astype(dtype)
        for start in range(0, n_samples, chunk):
            stop = min(start + chunk, n_samples)
            X[start:stop] += latent[start:stop].astype(dtype) @ basis_t
            X[start:stop] += offset
        Xs.append(X)
    return Xs, y
