"""``.npz`` files of views in the layout of the shared benchmarks, one by path or by name."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from pipeline.ingest import _common as common
from pipeline.ingest._checks import check_file
from pipeline.ingest._common import PathLike, SparseOption, View

__all__ = ["available_datasets", "load_dataset", "load_npz"]

_VIEW_KEY = re.compile(r"view(\d+)")
_SPARSE_NPZ_KEYS = {"data", "indices", "indptr", "format", "shape"}


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
        numbering, a view fails :func:`fastmice.check_views`, or its views and labels
        disagree on the number of samples.
    TypeError
        If a view is not numeric.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from pipeline.ingest import load_npz
    >>> path = os.path.join(tempfile.mkdtemp(), "toy.npz")
    >>> np.savez(path, view0=np.ones((4, 2)), view1=np.eye(4, 50), labels=[0, 0, 1, 1])
    >>> Xs, y = load_npz(path)
    >>> [type(X).__name__ for X in Xs], y.tolist()
    (['ndarray', 'csr_matrix'], [0, 0, 1, 1])
    """
    common.check_sparse_option(sparse)
    p = common.existing_file(path)
    check_file(p)
    try:
        z = np.load(p, allow_pickle=False)
    except Exception as exc:  # numpy and zipfile raise many error types
        raise common.read_failed(p, exc) from exc
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
            raise common.read_failed(p, exc) from exc
    labels = None if raw_labels is None else common.to_labels(raw_labels, f"labels in {p}")
    Xs = common.to_views(raw, [f"view{v} in {p.name}" for v in indices], sparse)
    common.check_labels(labels, Xs, f"view0 in {p.name}")
    return Xs, labels


def available_datasets(root: PathLike) -> list[str]:
    """Names of the data sets (``<name>.npz`` files) in the folder ``root``.

    Parameters
    ----------
    root : str or os.PathLike
        The folder (for the shared benchmarks, ``../shared/datasets`` beside the checkout).

    Returns
    -------
    list of str
        Sorted names (case-insensitively); empty if the folder does not exist.
    """
    folder = Path(root)
    if not folder.is_dir():
        return []
    return sorted((f.stem for f in folder.glob("*.npz") if f.is_file()), key=str.lower)


def load_dataset(
    name: str, root: PathLike, *, sparse: SparseOption = "auto"
) -> tuple[list[View], np.ndarray | None]:
    """Load a data set by name from a folder of ``<name>.npz`` files (the shared benchmarks).

    Parameters
    ----------
    name : str
        Data set name, e.g. ``"MSRCv1"`` (the file ``<root>/<name>.npz``); matched
        case-insensitively if there is no exact match.
    root : str or os.PathLike
        The folder of ``<name>.npz`` files.
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
    folder = Path(root)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"Dataset folder {folder} does not exist."
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
