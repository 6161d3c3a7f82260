"""A run's labels out of the store, with the samples' own ids: ``.parquet``, ``.csv``, ``.npy``.

The labels table of a run holds ``sample_id`` (the ids registered with the data: the id
column's values, or ``0 .. N-1``) and ``label``. ``.parquet`` keeps the table's metadata (run
id, ``random_state``, root seed, code version); ``.csv`` is the two columns; ``.npy`` is a
structured array with the fields ``sample_id`` and ``label`` (read with ``np.load``, no
pickle).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.results import labels_damage, rebuild_labels
from pipeline.runs import read_run
from storage import ArtifactNotFoundError, labels_from_table, write_file_atomic

__all__ = ["EXPORT_SUFFIXES", "check_export_path", "export_run", "write_labels"]

#: The file types a run's labels are written to.
EXPORT_SUFFIXES = (".parquet", ".csv", ".npy")


def check_export_path(path: str | os.PathLike[str], suffixes: tuple[str, ...] = EXPORT_SUFFIXES
                      ) -> Path:
    """``path`` as a Path, if it names a file of one of ``suffixes`` in an existing folder.

    Raises
    ------
    ValueError
        Naming the path and what is wrong with it.
    """
    out = Path(path)
    if out.suffix.lower() not in suffixes:
        raise ValueError(f"--out {os.fspath(path)}: expected a {', '.join(suffixes)} file name.")
    if out.is_dir():
        raise ValueError(f"--out {os.fspath(path)} is a directory; give a file name.")
    if not out.absolute().parent.is_dir():
        raise ValueError(f"--out {os.fspath(path)}: folder {out.absolute().parent} does not "
                         f"exist.")
    return out


def write_labels(table: Any, path: str | os.PathLike[str]) -> Path:
    """Write a labels table (``sample_id`` and label columns) to ``path`` atomically.

    Parameters
    ----------
    table : pyarrow.Table
        From :func:`storage.labels_table`.
    path : path-like
        ``.parquet`` (with the table's metadata), ``.csv`` or ``.npy`` (a structured array
        with one field per column).

    Returns
    -------
    path : Path
        Absolute.
    """
    out = check_export_path(path)
    suffix = out.suffix.lower()
    if suffix == ".csv":
        import pyarrow.csv as pacsv

        write_file_atomic(out, lambda f: pacsv.write_csv(table.replace_schema_metadata(None), f))
    elif suffix == ".npy":
        ids, columns, _ = labels_from_table(table)
        records = np.empty(ids.shape[0], dtype=[("sample_id", ids.dtype)] +
                           [(name, values.dtype) for name, values in columns.items()])
        records["sample_id"] = ids
        for name, values in columns.items():
            records[name] = values
        write_file_atomic(out, lambda f: np.save(f, records, allow_pickle=False))
    else:
        import pyarrow.parquet as pq

        write_file_atomic(out, lambda f: pq.write_table(table, f))
    return out.absolute()


def export_run(store: Any, run_id: str, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Write run ``run_id``'s labels (``sample_id``, ``label``) to ``path``.

    A missing or corrupt labels table is first rebuilt from the run's stored consensus.

    Returns
    -------
    summary : dict
        ``run_id``, ``dataset``, ``path`` (absolute), ``format``, ``n_samples``,
        ``n_clusters`` and ``id_kind`` (``"int"`` or ``"str"``).

    Raises
    ------
    ArtifactNotFoundError
        If there is no such run, or its labels are lost with its consensus.
    ValueError
        If ``path`` is not a ``.parquet``, ``.csv`` or ``.npy`` file name in an existing
        folder.
    """
    out = check_export_path(path)
    record = read_run(store, run_id)
    if labels_damage(store, record) is not None and not rebuild_labels(store, record):
        raise ArtifactNotFoundError(f"The labels of run {run_id} are lost with its consensus; "
                                    f"rerun the command that made the run.")
    import pyarrow.types as pat

    table = store.get(record["labels"])
    written = write_labels(table, out)
    return {"run_id": run_id, "dataset": record["dataset"], "path": str(written),
            "format": out.suffix.lower().lstrip("."), "n_samples": table.num_rows,
            "n_clusters": record["n_clusters"],
            "id_kind": "int" if pat.is_integer(table.column("sample_id").type) else "str"}
