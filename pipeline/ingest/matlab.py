"""MATLAB ``.mat`` files (v4 to v7) in the layouts common among multi-view benchmarks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from pipeline.ingest import _common as common
from pipeline.ingest._checks import check_file
from pipeline.ingest._common import PathLike, SparseOption, View

__all__ = ["load_mat"]

_MAT_VIEW_NAMES = ("X", "fea", "data")
_MAT_LABEL_NAMES = ("Y", "y", "gt", "truth", "labels", "label", "gnd", "truelabel")


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
        ``"keep"`` returns sparse MATLAB matrices as CSR and dense ones dense; see
        :mod:`pipeline.ingest` for ``"auto"``, ``True`` and ``False``.

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
    common.check_sparse_option(sparse)
    p = common.existing_file(path)
    check_file(p)
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
        raise common.read_failed(p, exc) from exc

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
        labels = common.to_labels(lvalue, f"label variable {lvar!r} in {p}")

    raw = _orient(raw, None if labels is None else labels.shape[0], p)
    Xs = common.to_views(raw, [f"{var}{{{v + 1}}} in {p.name}" for v in range(len(raw))], sparse)
    return Xs, labels
