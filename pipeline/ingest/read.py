"""Read user data files and register them as dataset batches.

The command line calls these before it starts a flow, so that a bad file or a bad name is
reported before anything is written; :mod:`tasks.datasets` wraps them as a Prefect task for
deployed flows.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.ingest._common import ShapeHook
from pipeline.ingest.ids import load_tables_with_ids
from pipeline.ingest.matlab import load_mat
from pipeline.ingest.npz import load_npz
from pipeline.ingest.views import load_views
from storage import NAME_PATTERN, ArtifactNotFoundError, content_key, validate_name
from storage.activity import working
from storage.datasets import DatasetStore, batch_fingerprint

__all__ = ["VIEW_SUFFIXES", "DatasetExistsError", "default_dataset_name", "read_data",
           "read_samples",
           "register_batch"]

#: File types accepted one file per view.
VIEW_SUFFIXES = (".npy", ".parquet", ".csv")


def read_data(paths: Sequence[str | os.PathLike], *, on_shapes: ShapeHook | None = None
              ) -> tuple[list[Any], np.ndarray | None]:
    """Read a multi-view data set from files and validate its views.

    Parameters
    ----------
    paths : sequence of path-like
        One of: a single ``.npz`` holding ``view0 ... view{V-1}`` and optional ``labels``
        (the layout of ``../shared/datasets/INDEX.md``); a single ``.mat``; one file per view
        (``.npy``, ``.parquet``, ``.csv``; a single such file is a one-view data set); or a
        directory of ``view*.npy`` / ``view*.npz`` files with an optional ``labels.npy``.
    on_shapes : callable, optional
        For one file per view or a directory: ``on_shapes(n_samples, n_features,
        itemsize)`` before the views' values are checked (see :func:`load_views`).

    Returns
    -------
    Xs : list of ndarray or csr_matrix, each of shape (n_samples, n_features_v)
        Validated by the loaders with :func:`fastmice.check_views` (float32/float64,
        finite, equal rows).
        ``.npy`` views stay on disk as row readers (:class:`storage.rows.NpyRows`): a data
        set larger than memory is checked, hashed and copied into the store a block of rows
        at a time.
    labels : ndarray of shape (n_samples,) or None
        Ground truth, if the data carry it (used only for scores and a default k).

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    ValueError
        For an unreadable file, a wrong layout or views with different numbers of samples.
    """
    files = [Path(p) for p in paths]
    if not files:
        raise ValueError("No data given: pass a .npz, a .mat, one file per view, or a "
                         "directory of view*.npy files.")
    for f in files:
        if not f.exists():
            raise FileNotFoundError(f"No such file or directory: {f}")
    if len(files) == 1 and files[0].is_dir():
        Xs, labels = load_views(files[0], mmap_mode="r", on_shapes=on_shapes)
    elif len(files) == 1 and files[0].suffix.lower() == ".npz":
        Xs, labels = load_npz(files[0])
    elif len(files) == 1 and files[0].suffix.lower() == ".mat":
        Xs, labels = load_mat(files[0])
    else:
        for f in files:
            if f.is_dir() or f.suffix.lower() not in VIEW_SUFFIXES:
                raise ValueError(
                    f"{f}: expected one .npz, one .mat or one directory alone, or one "
                    f"{'/'.join(VIEW_SUFFIXES)} file per view.")
        Xs, labels = load_views(files, mmap_mode="r", on_shapes=on_shapes)
    return Xs, labels


def read_samples(paths: Sequence[str | os.PathLike], *, id_column: str | None = None,
                 on_shapes: ShapeHook | None = None
                 ) -> tuple[list[Any], np.ndarray | None, np.ndarray | None]:
    """:func:`read_data`, and the sample ids of the files' ``id_column`` if one is named.

    Parameters
    ----------
    paths : sequence of path-like
        As for :func:`read_data`; with ``id_column``, one ``.parquet``/``.csv`` file per view.
    id_column : str, optional
        The column holding the sample ids (integers or strings) in every file: the views'
        rows are aligned by it (:func:`pipeline.ingest.ids.load_tables_with_ids`).
    on_shapes : callable, optional

    Returns
    -------
    Xs : list of views
    labels : ndarray of shape (n_samples,) or None
    ids : ndarray of shape (n_samples,) (int64 or str), or None without ``id_column``
    """
    if id_column is None:
        return (*read_data(paths, on_shapes=on_shapes), None)
    if not paths:
        raise ValueError("No data given: pass one .parquet or .csv file per view.")
    Xs, ids = load_tables_with_ids(paths, id_column, on_shapes=on_shapes)
    return Xs, None, ids


def default_dataset_name(paths: Sequence[str | os.PathLike]) -> str:
    """A dataset name derived from the data's file name (``Hdigit.npz`` -> ``Hdigit``).

    One file or directory gives its stem; several per-view files give their folder's name.

    Raises
    ------
    ValueError
        If no valid name (``[A-Za-z0-9][A-Za-z0-9._-]{0,127}``) can be derived.
    """
    files = [Path(p) for p in paths]
    source = files[0].resolve() if files else Path()
    stem = source.name if source.is_dir() else source.stem
    if len(files) > 1:
        stem = source.parent.name
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-._")[:100]
    if not re.fullmatch(NAME_PATTERN, name):
        raise ValueError(f"Cannot derive a dataset name from {os.fspath(files[0])!r}; "
                         f"pass one with --name.")
    return name


def _same_views(batch: dict[str, Any], view_keys: list[str]) -> bool:
    return [ref["key"] for ref in batch["views"]] == view_keys


def register_batch(store: Any, name: str, Xs: Sequence[Any], labels: np.ndarray | None,
                   *, mode: str, ids: np.ndarray | None = None) -> tuple[dict[str, Any], bool]:
    """Register views as a dataset (``mode="create"``) or as its next batch (``"append"``).

    Both are idempotent: creating a dataset that holds exactly these samples, or appending a
    batch whose views equal one the dataset already has, writes no batch, but stores back
    any of that batch's files found missing or corrupt (same content keys). Registrations of
    one dataset take turns (the store lock ``dataset-<name>``), so two commands registering
    the same data at once both succeed.

    Parameters
    ----------
    store : store
        From :func:`storage.open_store`.
    name : str
        Dataset name.
    Xs : list of ndarray or csr_matrix
        Views validated by :func:`fastmice.check_views` (as :func:`read_data` returns them);
        the store itself checks only their layout.
    labels : ndarray of shape (n_samples,) or None
    mode : {"create", "append"}
    ids : ndarray of shape (n_samples,), optional
        The samples' ids (int64 or str, as :func:`read_samples` returns them); default: the
        store's (consecutive integers).

    Returns
    -------
    manifest : dict
        The dataset's manifest after the call.
    written : bool
        Whether a batch was written.

    Raises
    ------
    ValueError
        If ``mode="create"`` and the dataset exists with other data, or the batch does not
        match the dataset (views, features, dtypes; from :class:`DatasetStore`).
    ArtifactNotFoundError
        If ``mode="append"`` and the dataset does not exist.
    """
    validate_name(name, "dataset name")
    with working(store, f"registration of dataset {name}"), store.lock(f"dataset-{name}"):
        return _register(store, name, Xs, labels, mode, ids)


class DatasetExistsError(ValueError):
    """``cluster`` of data under the name of a dataset that holds other data (or has grown
    since these data were its first batch); :meth:`render` names the data in the commands
    that would work."""

    def __init__(self, name: str, url: str, manifest: dict[str, Any], first: bool) -> None:
        self.name, self.url, self.first = name, url, first
        self.n_samples, self.n_batches = manifest["n_samples"], len(manifest["batches"])
        super().__init__(self.render("DATA"))

    def render(self, data: str) -> str:
        """The message, with ``data`` standing for the data files in the commands."""
        name = self.name
        if self.first:
            return (f"Dataset {name!r} already exists in store {self.url} with other data: "
                    f"these data are its first batch, and {self.n_batches - 1} appended "
                    f"batch(es) made it {self.n_samples} samples. `fastmice recluster {name}` "
                    f"labels every sample; `fastmice cluster {data} --name {name}-original` "
                    f"clusters these data alone again, as a new dataset.")
        return (f"Dataset {name!r} already exists in store {self.url} with other data "
                f"({self.n_samples} samples in {self.n_batches} batch(es)): `fastmice cluster "
                f"{data} --name OTHER` clusters these data as a new dataset, `fastmice append "
                f"{name} {data}` adds them to it as new samples, `fastmice recluster {name}` "
                f"relabels it.")


def _register(store: Any, name: str, Xs: Sequence[Any], labels: np.ndarray | None,
              mode: str, ids: np.ndarray | None) -> tuple[dict[str, Any], bool]:
    datasets = DatasetStore(store)
    if mode == "create":
        if not datasets.exists(name):
            return datasets.create(name, Xs, ids=ids, labels=labels), True
        manifest = datasets.manifest(name)
        given = np.arange(Xs[0].shape[0], dtype=np.int64) if ids is None else ids
        first = manifest["batches"][0]["fingerprint"] == batch_fingerprint(Xs, given)
        if len(manifest["batches"]) == 1 and first:
            datasets.restore(name, 0, Xs, labels, ids)
            return manifest, False
        raise DatasetExistsError(name, store.url, manifest, first)
    if mode == "append":
        if not datasets.exists(name):
            raise ArtifactNotFoundError(f"Unknown dataset {name!r} in store {store.url}; create "
                                        f"it with `fastmice cluster DATA --name {name}`.")
        manifest = datasets.manifest(name)
        view_keys = [content_key(X) for X in Xs] if len(Xs) == manifest["n_views"] else []
        for batch in manifest["batches"]:
            if _same_views(batch, view_keys) and \
                    (ids is None or content_key(ids) == batch["ids"]["key"]):
                datasets.restore(name, batch["batch_id"], Xs, labels, ids)
                return manifest, False
        return datasets.append(name, Xs, ids=ids, labels=labels), True
    raise ValueError(f"mode={mode!r} is not valid; expected 'create' or 'append'.")
