"""Tabular views (``.parquet``, ``.csv``) with a column of sample ids, aligned by id.

A table's feature columns must all be numeric: a string column is refused (naming it and its
file), never dropped, and becomes the sample ids only when named as the id column. Several
tables describe the same samples when their id columns hold the same ids, in any order: the
rows of every view are put in the order of the first view's ids. Ids missing from a view or
repeated within one are refused, naming the first few and the file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.ingest import _common as common
from pipeline.ingest._checks import check_file
from pipeline.ingest._common import LayoutError, ShapeHook

__all__ = ["TABLE_SUFFIXES", "load_tables_with_ids", "numeric_matrix"]

#: The view files that have named columns.
TABLE_SUFFIXES = (".parquet", ".csv")
#: How many ids a message lists.
SHOWN = 5


def _shown(values: Any) -> str:
    values = list(values)
    more = f" and {len(values) - SHOWN} more" if len(values) > SHOWN else ""
    return ", ".join(repr(v) for v in values[:SHOWN]) + more


def _read_table(p: Path) -> Any:
    """The file as a pyarrow Table (a CSV file's first line is its header)."""
    check_file(p)
    try:
        if p.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(p)
        import pyarrow.csv as pacsv

        return pacsv.read_csv(p)
    except Exception as exc:  # pyarrow raises many error types
        raise common.read_failed(p, exc) from exc


def numeric_matrix(table: Any, p: Path, id_column: str | None = None) -> np.ndarray:
    """Every column of ``table`` but ``id_column`` as a float matrix (n_rows, n_columns).

    Raises
    ------
    LayoutError
        If a column is not numeric (named, with a hint at the id column) or has missing
        values, or no feature column is left.
    """
    import pyarrow.types as pat

    names = [n for n in table.column_names if n != id_column]
    if not names:
        raise LayoutError(f"{p} has no feature columns besides the id column {id_column!r}.")
    columns = []
    for name in names:
        col = table.column(name)
        if not (pat.is_integer(col.type) or pat.is_floating(col.type)
                or pat.is_boolean(col.type)):
            hint = ("" if id_column is not None else
                    f"; if it holds the sample ids, pass --id-column {name}")
            raise LayoutError(f"Column {name!r} of {p} is not numeric ({col.type}){hint}.")
        if col.null_count:
            raise LayoutError(f"Column {name!r} of {p} has {col.null_count} missing values.")
        columns.append(col.to_numpy())
    dtype = np.result_type(*columns)
    if dtype not in (np.float32, np.float64):
        dtype = np.float64
    X = np.empty((table.num_rows, len(columns)), dtype=dtype)
    for j, col in enumerate(columns):
        X[:, j] = col
    return X


def _ids_of(table: Any, p: Path, id_column: str) -> np.ndarray:
    """The id column as int64 or str values, unique."""
    import pyarrow.types as pat

    if id_column not in table.column_names:
        raise LayoutError(f"{p} has no column {id_column!r} (the id column); its columns are "
                          f"{_shown(table.column_names)}.")
    col = table.column(id_column)
    if col.null_count:
        raise LayoutError(f"Id column {id_column!r} of {p} has {col.null_count} missing "
                          f"values.")
    if pat.is_integer(col.type):
        ids = col.to_numpy().astype(np.int64)
    elif pat.is_string(col.type) or pat.is_large_string(col.type):
        ids = np.asarray(col.to_pylist(), dtype=str)
    else:
        raise LayoutError(f"Id column {id_column!r} of {p} holds {col.type} values; sample "
                          f"ids must be integers or strings.")
    unique, counts = np.unique(ids, return_counts=True)
    if unique.size < ids.size:
        raise LayoutError(f"Id column {id_column!r} of {p} repeats {int((counts > 1).sum())} "
                          f"id(s): {_shown(unique[counts > 1].tolist())}.")
    return ids


def _order_by(ids: np.ndarray, reference: np.ndarray, p: Path, first: Path,
              id_column: str) -> np.ndarray:
    """Row indices putting ``ids`` in the order of ``reference`` (the same set of ids)."""
    if ids.dtype.kind != reference.dtype.kind:
        kinds = {"U": "strings", "i": "integers"}
        raise LayoutError(f"Id column {id_column!r} of {p} holds {kinds[ids.dtype.kind]}; "
                          f"that of {first} holds {kinds[reference.dtype.kind]}.")
    missing = np.setdiff1d(reference, ids)
    if missing.size:
        raise LayoutError(f"{missing.size} id(s) of {first} are missing from {p} (column "
                          f"{id_column!r}): {_shown(missing.tolist())}.")
    extra = np.setdiff1d(ids, reference)
    if extra.size:
        raise LayoutError(f"{extra.size} id(s) of {p} (column {id_column!r}) are not in "
                          f"{first}: {_shown(extra.tolist())}.")
    sorter = np.argsort(ids, kind="stable")
    return sorter[np.searchsorted(ids, reference, sorter=sorter)]


def load_tables_with_ids(paths: Sequence[str | os.PathLike], id_column: str, *,
                         on_shapes: ShapeHook | None = None
                         ) -> tuple[list[Any], np.ndarray]:
    """Views from ``.parquet``/``.csv`` files that each hold an id column, aligned by id.

    Parameters
    ----------
    paths : sequence of path-like
        One table per view.
    id_column : str
        The column of sample ids (integers or strings) in every file.
    on_shapes : callable, optional
        As for :func:`pipeline.ingest.load_views`.

    Returns
    -------
    Xs : list of ndarray of shape (n_samples, n_features_v)
        Validated by :func:`fastmice.check_views`; rows in the order of the first file's ids.
    ids : ndarray of shape (n_samples,)
        int64 or str.

    Raises
    ------
    ValueError
        For a file that is not a table, a missing id column, repeated or missing ids, or a
        non-numeric feature column (each message names the column or ids and the file).
    """
    files = [common.existing_file(p) for p in paths]
    for f in files:
        if f.suffix.lower() not in TABLE_SUFFIXES:
            raise ValueError(f"{f}: an id column (--id-column {id_column}) needs "
                             f"{' or '.join(TABLE_SUFFIXES)} views, whose columns are named.")
    raw, reference = [], None
    for f in files:
        table = _read_table(f)
        ids = _ids_of(table, f, id_column)
        X = numeric_matrix(table, f, id_column)
        if reference is None:
            reference = ids
        elif ids.size != reference.size or not np.array_equal(ids, reference):
            X = X[_order_by(ids, reference, f, files[0], id_column)]
        raw.append(X)
    common.announce_shapes(raw, on_shapes)
    names = [f.name for f in files]
    if len(set(names)) < len(names):
        names = [str(f) for f in files]
    return common.to_views(raw, names, "keep"), reference
