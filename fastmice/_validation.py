"""The one view validator: :func:`check_views`, used by the estimator, the loaders and the pipeline.

Messages name the view, the problem and the value. The parameters are checked by
:class:`fastmice.EnsembleParams`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

__all__ = ["check_views", "is_row_reader"]


#: Bytes of a dense view checked for NaN at a time (the check's temporaries stay this small).
_CHECK_BYTES = 32 * 2**20
#: Dense bytes over all views from which they are checked side by side in threads (the
#: checks release the GIL; below this, a thread costs more than it saves).
_THREADED_CHECK_BYTES = 256 * 2**20


def is_row_reader(X) -> bool:
    """Whether ``X`` is a 2-D dense view read by rows on demand (not an ndarray).

    Such a view (e.g. ``storage.NpyRows`` over a ``.npy`` file on disk) has ``shape``,
    ``dtype``, ``ndim == 2`` and ``X[i:j]`` / ``X[rows]`` returning ndarrays; the algorithm
    reads it block by block and never holds it whole.
    """
    return (not isinstance(X, np.ndarray) and not sp.issparse(X)
            and getattr(X, "ndim", None) == 2 and hasattr(X, "dtype")
            and hasattr(X, "shape") and hasattr(X, "__getitem__"))


def _first_bad_rows(X) -> tuple[int, int | None]:
    """Rows of a dense view with NaN or inf: their count and the first, read block by block."""
    step = max(1, _CHECK_BYTES // max(1, X.shape[1] * np.dtype(X.dtype).itemsize))
    count, first = 0, None
    # A row reader (a view on disk) reads into one reused buffer: no new array per block.
    buffer = np.empty((min(step, X.shape[0]), X.shape[1]), dtype=X.dtype) \
        if hasattr(X, "read") and not isinstance(X, np.ndarray) else None
    for start in range(0, X.shape[0], step):
        block = np.asarray(X[start:start + step]) if buffer is None else \
            X.read(start, start + step, out=buffer)
        if np.isfinite(np.add.reduce(block, axis=None)):
            continue  # a NaN or inf anywhere makes the sum one (a sum can only overflow to inf)
        bad = np.flatnonzero(~np.isfinite(block).all(axis=1))
        if bad.size and first is None:
            first = start + int(bad[0])
        count += bad.size
    return count, first


def _check_row_reader(X, view: str):
    if np.dtype(X.dtype) not in (np.float32, np.float64):
        raise TypeError(f"{view} is read from disk with dtype {X.dtype}; store it as float32 "
                        f"or float64 (it is read by rows and cannot be converted on the fly).")
    return X


def _check_view(X, view: str):
    if is_row_reader(X):
        X = _check_row_reader(X, view)
    elif sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{view} must be 2-D; got a sparse array of shape {X.shape}.")
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or np.iscomplexobj(X):
            raise TypeError(f"{view} has dtype {X.dtype}; expected a real numeric dtype.")
        X = sp.csr_matrix(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        values = X.data
    else:
        if not hasattr(X, "__array__") and not isinstance(X, list | tuple):
            raise TypeError(f"{view} is a {type(X).__name__}; expected an array-like or "
                            "a scipy.sparse matrix.")
        try:
            X = np.asarray(X)
        except (ValueError, TypeError) as exc:
            raise TypeError(f"{view} cannot be read as a numeric array: {exc}") from None
        if X.dtype.kind not in "biuf":
            raise TypeError(f"{view} has dtype {X.dtype}; expected a real numeric dtype "
                            "(float32 or float64 preferably).")
        if X.ndim != 2:
            hint = " Use X.reshape(-1, 1) for a single feature." if X.ndim == 1 else ""
            raise ValueError(f"{view} must be 2-D (n_samples, n_features); got shape "
                             f"{X.shape}.{hint}")
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
    if X.shape[1] == 0:
        raise ValueError(f"{view} has no features (shape {X.shape}).")
    if X.shape[0] == 0:
        raise ValueError(f"{view} has no samples (shape {X.shape}).")
    if sp.issparse(X):
        if not np.isfinite(values).all():
            bad_rows = np.unique(np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[
                ~np.isfinite(X.data)])
            raise ValueError(f"{view} has {bad_rows.size} row(s) with NaN or infinite values "
                             f"(first at row {bad_rows[0]}).")
        return X
    count, first = _first_bad_rows(X)
    if count:
        raise ValueError(f"{view} has {count} row(s) with NaN or infinite values (first at "
                         f"row {first}).")
    return X


def _dense_bytes(X) -> int:
    if isinstance(X, np.ndarray) or is_row_reader(X):
        return int(np.prod(X.shape)) * np.dtype(X.dtype).itemsize
    return 0


def _check_each(Xs: Sequence, label: list[str]) -> list:
    """:func:`_check_view` of every view; large dense views side by side in threads (the
    first failing view, in view order, is the one reported)."""
    workers = min(len(Xs), os.cpu_count() or 1)
    if workers < 2 or sum(_dense_bytes(X) for X in Xs) < _THREADED_CHECK_BYTES:
        return [_check_view(X, name) for X, name in zip(Xs, label, strict=True)]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(_check_view, Xs, label))


def check_views(Xs, *, n_views: int | None = None, n_features: Sequence[int] | None = None,
                names: Sequence[str] | None = None) -> list:
    """Validate a list of views.

    Parameters
    ----------
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
        A single 2-D array or sparse matrix is taken as one view.
    n_views, n_features : optional
        The expected number of views and features per view (when placing new samples).
    names : sequence of str, optional
        Where each view comes from (a file name...), added to the messages: ``View 1 (b.npy)``.

    Returns
    -------
    Xs : list of ndarray, csr_matrix or row reader
        float32 views stay float32, other numeric views become float64; sparse views CSR.
        A view read by rows from disk (:func:`is_row_reader`) is checked block by block and
        returned as it is.
    """
    if sp.issparse(Xs) or (isinstance(Xs, np.ndarray) and Xs.ndim == 2) or is_row_reader(Xs):
        Xs = [Xs]
    if isinstance(Xs, np.ndarray | str | bytes) or not isinstance(Xs, Sequence):
        raise TypeError(f"Xs must be a list of views (arrays or sparse matrices); got "
                        f"{type(Xs).__name__}.")
    if len(Xs) == 0:
        raise ValueError("Xs is an empty list; expected at least one view.")
    label = [f"View {i}" + (f" ({names[i]})" if names else "") for i in range(len(Xs))]
    views = _check_each(Xs, label)
    n_samples = views[0].shape[0]
    for i, X in enumerate(views[1:], start=1):
        if X.shape[0] != n_samples:
            raise ValueError(f"{label[i]} has {X.shape[0]} samples; expected {n_samples} (the "
                             f"number of samples in {label[0][0].lower()}{label[0][1:]}).")
    if n_views is not None and len(views) != n_views:
        raise ValueError(f"Xs has {len(views)} views; the model was fitted on {n_views}.")
    if n_features is not None:
        for i, (X, d) in enumerate(zip(views, n_features, strict=True)):
            if X.shape[1] != d:
                raise ValueError(f"View {i} has {X.shape[1]} features; the model was fitted "
                                 f"with {d}.")
    return views
