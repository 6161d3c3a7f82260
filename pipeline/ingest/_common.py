"""What every loader shares: the view check (the library's), the container choice, labels.

Every loader returns ``(Xs, labels)``: ``Xs`` is a list of views, each an array of shape
(n_samples, n_features_v) -- a dense ``float64`` or ``float32`` :class:`numpy.ndarray` or a
:class:`scipy.sparse.csr_matrix` -- validated by :func:`fastmice.check_views`, and ``labels``
is an array of shape (n_samples,) or ``None`` when the file holds no ground truth.

The ``sparse`` option of the loaders chooses each view's container:

* ``"auto"`` -- CSR when the view's density ``nnz / (n_samples * n_features)`` is below
  :data:`DENSITY_THRESHOLD` (text and graph views, as a user would hand them in), dense
  otherwise;
* ``True`` / ``False`` -- every view CSR / every view dense;
* ``"keep"`` -- as stored in the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeAlias

import numpy as np
import scipy.sparse as sp

import fastmice

__all__ = ["DENSITY_THRESHOLD", "PathLike", "ShapeHook", "SparseOption", "View"]

View: TypeAlias = np.ndarray | sp.csr_matrix
SparseOption: TypeAlias = bool | Literal["auto", "keep"]
PathLike: TypeAlias = str | os.PathLike
#: ``hook(n_samples, n_features, itemsize)``: told the data's shape before the values are read.
ShapeHook: TypeAlias = Callable[[int, list[int], int], None]

#: Views whose density ``nnz / (n_samples * n_features)`` is below this are returned as
#: CSR under ``sparse="auto"``.
DENSITY_THRESHOLD = 0.1


class LayoutError(ValueError):
    """A readable file whose content has the wrong layout (raised as is, never wrapped)."""


def read_failed(path: Path, exc: BaseException) -> ValueError:
    return ValueError(f"Could not read {path}: {type(exc).__name__}: {exc}")


def check_sparse_option(sparse: SparseOption) -> None:
    if not (isinstance(sparse, bool) or sparse in ("auto", "keep")):
        raise ValueError(f"sparse={sparse!r} is not valid; expected 'auto', 'keep', True or False.")


def existing_file(path: PathLike, what: str = "file") -> Path:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"Expected a path (str or os.PathLike); got {type(path).__name__}.")
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"No such {what}: {p}")
    if p.is_dir():
        raise ValueError(f"Expected a {what}, got a directory: {p}")
    return p


def announce_shapes(raw: Sequence[object], on_shapes: ShapeHook | None) -> None:
    """Tell ``on_shapes`` the views' shape, if they agree on it, before any value is read.

    ``itemsize`` is that of the views once validated (float32 stays, the rest becomes
    float64). Views that do not agree are left to :func:`to_views`, which says what is
    wrong with them.
    """
    shapes = [getattr(X, "shape", ()) for X in raw]
    if on_shapes is None or any(len(s) != 2 or 0 in s or s[0] != shapes[0][0]
                                for s in shapes):
        return
    itemsize = max(4 if getattr(X, "dtype", None) == np.float32 else 8 for X in raw)
    on_shapes(shapes[0][0], [s[1] for s in shapes], itemsize)


def to_views(raw: Sequence[object], names: Sequence[str], sparse: SparseOption) -> list[View]:
    """Validate the views read from a file with :func:`fastmice.check_views` (the one view
    validator; ``names`` say where each view comes from), then choose each container."""
    return [_container(X, sparse) for X in fastmice.check_views(list(raw), names=names)]


def _container(X: View, sparse: SparseOption) -> View:
    if fastmice.is_row_reader(X):
        return X  # a dense view on disk, read by blocks where it is used
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


def to_labels(y: object, name: str) -> np.ndarray:
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


def check_labels(labels: np.ndarray | None, Xs: Sequence[View], first: str) -> None:
    """Labels, if any, must have one entry per row of the views (``first`` names view 0)."""
    if labels is not None and labels.shape[0] != Xs[0].shape[0]:
        raise ValueError(
            f"labels have {labels.shape[0]} entries but the views have {Xs[0].shape[0]} rows "
            f"({first})."
        )
