"""Label tables: sample ids plus one column per labelling, as a ``pyarrow.Table`` (Parquet).

Used for the base clusterings (one column per ensemble member) and the final labels. pyarrow
is imported only when these functions are called.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from storage._codecs import to_jsonable

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["ID_COLUMN", "labels_from_table", "labels_table"]

#: Name of the sample-id column.
ID_COLUMN = "sample_id"
#: Schema-metadata key under which the ``metadata`` dict is stored (as JSON).
METADATA_KEY = b"fastmice"


def _column(values: Any, what: str, n: int | None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be 1-D; got shape {arr.shape}.")
    if arr.dtype.hasobject:
        raise TypeError(f"{what} has dtype object; use integer or fixed-width string values.")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{what} has {arr.shape[0]} values; expected {n} (the number of ids).")
    return arr


def labels_table(
    ids: Any, labels: Mapping[str, Any], metadata: Mapping[str, Any] | None = None
) -> pa.Table:
    """Build a table of sample ids and labellings.

    Parameters
    ----------
    ids : array-like of shape (n_samples,)
        Sample ids (int64 in datasets from :class:`~storage.datasets.DatasetStore`).
    labels : dict of str to array-like of shape (n_samples,)
        One column per labelling, in this order (e.g. ``{"labels": y}``, or one entry per
        ensemble member for base clusterings). Dtypes are kept (use int32 to halve size).
    metadata : dict, optional
        JSON-able facts (parameters, seed, code version...) kept in the schema metadata
        under ``b"fastmice"``.

    Returns
    -------
    table : pyarrow.Table
        Columns ``sample_id`` then the labellings; ``store.put`` writes it as Parquet.

    Raises
    ------
    ValueError
        If a column is not 1-D, has the wrong length, or is named ``"sample_id"``.
    TypeError
        If a column name is not a str, a column has object dtype, or `metadata` is not
        JSON-able.

    Examples
    --------
    >>> import numpy as np
    >>> t = labels_table(np.arange(3), {"labels": np.array([0, 1, 1])}, {"seed": 7})
    >>> ids, labels, meta = labels_from_table(t)
    >>> labels["labels"].tolist(), meta
    ([0, 1, 1], {'seed': 7})
    """
    import pyarrow as pa

    id_col = _column(ids, "ids", None)
    n = id_col.shape[0]
    names, arrays = [ID_COLUMN], [pa.array(id_col)]
    for name, values in labels.items():
        if not isinstance(name, str):
            raise TypeError(f"Label column names must be str; got {name!r}.")
        if name == ID_COLUMN:
            raise ValueError(f"A label column cannot be named {ID_COLUMN!r} (the id column).")
        names.append(name)
        arrays.append(pa.array(_column(values, f"Label column {name!r}", n)))
    meta_json = json.dumps(to_jsonable(dict(metadata or {}), "metadata"), sort_keys=True)
    return pa.Table.from_arrays(arrays, names=names, metadata={METADATA_KEY: meta_json.encode()})


def labels_from_table(table: pa.Table) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, Any]]:
    """Split a table from :func:`labels_table` back into ids, labellings and metadata.

    Parameters
    ----------
    table : pyarrow.Table
        With a ``sample_id`` column (as read back by ``store.get``).

    Returns
    -------
    ids : ndarray of shape (n_samples,)
    labels : dict of str to ndarray of shape (n_samples,)
        In column order.
    metadata : dict
        The ``metadata`` given to :func:`labels_table` (empty if none).

    Raises
    ------
    ValueError
        If the table has no ``sample_id`` column or a column has missing values.
    """
    if ID_COLUMN not in table.column_names:
        raise ValueError(
            f"The table has no {ID_COLUMN!r} column (columns: {table.column_names}); "
            f"was it made by labels_table?"
        )

    def to_numpy(name: str) -> np.ndarray:
        column = table.column(name)
        if column.null_count:
            raise ValueError(f"Column {name!r} has {column.null_count} missing values.")
        values = column.to_numpy()
        return values.astype(str) if values.dtype == object else values

    ids = to_numpy(ID_COLUMN)
    labels = {name: to_numpy(name) for name in table.column_names if name != ID_COLUMN}
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    return ids, labels, json.loads(raw) if raw else {}
