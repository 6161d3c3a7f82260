"""``DatasetStore``: multi-view datasets as append-only sequences of batches.

A dataset is a named, versioned record (kind ``"dataset"``) listing its batches; each batch
stores, as content-addressed artifacts, one file per view (dense -> ``.npy`` in C order,
memory-mappable; sparse -> canonical CSR ``.npz``), its sample ids (int64 ``.npy``) and,
optionally, its labels (``.npy``).

Fingerprints (the keys the pipeline derives its artifact keys from)::

    batch fingerprint   = content_key({"views": Xs, "ids": ids})
    dataset fingerprint = content_key([batch fingerprint, ...])      # in batch order
    view artifact key   = content_key(X)

so the same data under two names has the same fingerprint and shares its artifacts, and
appending a batch changes the dataset fingerprint but not the fingerprints of earlier batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from storage._batch_repair import BatchRepairMixin
from storage._batches import (
    IO_THREADS,
    as_stored,
    batch_fingerprint,
    check_fits,
    check_ids,
    dataset_fingerprint,
    id_kind,
    select,
    view_info,
)
from storage._names import validate_name
from storage._open import open_store
from storage.base import BaseStore, utc_now
from storage.errors import ArtifactIntegrityError, ArtifactNotFoundError
from storage.keys import canonical, content_key, key_of_canonical
from storage.rows import StackedRows

__all__ = ["DatasetStore", "batch_fingerprint", "dataset_fingerprint"]

DATASET_FORMAT = "fastmice-dataset/1"
RECORD_KIND = "dataset"
VIEW_KIND = "dataset-view"
IDS_KIND = "dataset-ids"
LABELS_KIND = "dataset-labels"


class DatasetStore(BatchRepairMixin):
    """Named multi-view datasets stored batch by batch in an artifact store.

    Parameters
    ----------
    store : store, str or path-like, optional
        An artifact store or anything :func:`storage.open_store` accepts (default: the
        default store).

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from storage.datasets import DatasetStore
    >>> tmp = tempfile.TemporaryDirectory()
    >>> ds = DatasetStore(tmp.name)
    >>> rng = np.random.default_rng(0)
    >>> m = ds.create("blobs", [rng.random((4, 3)), rng.random((4, 5))])
    >>> m = ds.append("blobs", [rng.random((2, 3)), rng.random((2, 5))])
    >>> [b["n_samples"] for b in m["batches"]], ds.load_ids("blobs").tolist()
    ([4, 2], [0, 1, 2, 3, 4, 5])
    >>> [X.shape for X in ds.load_views("blobs")]
    [(6, 3), (6, 5)]
    >>> tmp.cleanup()
    """

    def __init__(self, store: BaseStore | str | os.PathLike[str] | None = None) -> None:
        self.store = open_store(store)

    def __repr__(self) -> str:
        return f"DatasetStore({self.store!r})"

    # ------------------------------------------------------------------ queries

    def list(self) -> list[str]:
        """Sorted dataset names."""
        return self.store.list_records(RECORD_KIND)

    def exists(self, name: str) -> bool:
        """Whether dataset `name` exists (a manifest whose every version is corrupt has been
        set aside in quarantine: the dataset no longer exists, and can be registered anew)."""
        if not self.store.record_version(RECORD_KIND, name):
            return False
        try:
            self.store.read_latest(RECORD_KIND, name)
        except ArtifactIntegrityError:
            return False
        return True

    def manifest(self, name: str, *, version: int | None = None) -> dict[str, Any]:
        """The manifest of a dataset (its latest version unless `version` is given).

        Returns
        -------
        manifest : dict
            ``name``, ``version`` (record version, bumped by each append), ``n_views``,
            ``n_features`` (list), ``view_types`` (``"dense"``/``"sparse"`` per view),
            ``dtypes``, ``n_samples``, ``next_id``, ``fingerprint`` and ``batches``: a list of
            ``{"batch_id", "n_samples", "first_row", "fingerprint", "views": [ref dicts],
            "ids": ref dict, "labels": ref dict or None, "created"}``.

        Raises
        ------
        ArtifactNotFoundError
            If there is no such dataset.
        """
        validate_name(name, "dataset name")
        if version is None:
            try:
                version, manifest = self.store.read_latest(RECORD_KIND, name)
            except ArtifactNotFoundError:
                raise ArtifactNotFoundError(
                    f"No dataset {name!r} in store {self.store.url}; create it with "
                    f"DatasetStore.create()."
                ) from None
        else:
            manifest = self.store.read_record(RECORD_KIND, name, version=version)
        manifest["version"] = version
        return manifest

    # ------------------------------------------------------------------ writing

    def create(
        self, name: str, Xs: Sequence[Any], ids: Any = None, labels: Any = None
    ) -> dict[str, Any]:
        """Create dataset `name` with one batch.

        Parameters
        ----------
        name : str
            Dataset name, ``[A-Za-z0-9][A-Za-z0-9._-]{0,127}`` without ``..``.
        Xs : list of {ndarray, sparse matrix} of shape (n_samples, n_features_v)
            The views; numeric, same number of rows. Sparse views are stored as canonical
            CSR, dense ones as C-ordered ``.npy``; dtypes are kept.
        ids : array-like of int or str of shape (n_samples,), optional
            Unique sample ids (int64, or strings: then every later batch gives string ids
            too, and the manifest says ``"id_kind": "str"``); default ``0..n_samples-1``.
        labels : array-like of shape (n_samples,), optional
            Ground-truth labels, kept beside the batch (not part of the fingerprint).

        Returns
        -------
        manifest : dict
            See :meth:`manifest`.

        Raises
        ------
        ValueError
            If the dataset exists, the name is invalid, or the views, ids or labels are
            inconsistent (the message names the view and both counts).
        TypeError
            If a view is not an array or sparse matrix, or ids are not integers.
        RecordConflictError
            If another process created the dataset meanwhile.
        """
        validate_name(name, "dataset name")
        version = self.store.record_version(RECORD_KIND, name)
        if version:
            old = self.manifest(name, version=version)
            raise ValueError(
                f"Dataset {name!r} already exists in store {self.store.url} (version {version}, "
                f"{old['n_samples']} samples in {len(old['batches'])} batches); use append() to "
                f"add samples."
            )
        views = as_stored(Xs)
        infos = [view_info(X) for X in views]
        manifest: dict[str, Any] = {
            "format": DATASET_FORMAT,
            "name": name,
            "n_views": len(views),
            "n_features": [n for _, _, n in infos],
            "view_types": [t for t, _, _ in infos],
            "dtypes": [d for _, d, _ in infos],
            "n_samples": 0,
            "next_id": 0,
            "created": utc_now(),
            "batches": [],
        }
        return self._add_batch(manifest, views, ids, labels, expected_version=0)

    def append(
        self, name: str, Xs: Sequence[Any], ids: Any = None, labels: Any = None
    ) -> dict[str, Any]:
        """Append a batch of new samples to dataset `name`.

        Parameters
        ----------
        name : str
            An existing dataset.
        Xs : list of {ndarray, sparse matrix} of shape (n_new, n_features_v)
            Same number of views, features per view, dtype and dense/sparse type as the
            dataset.
        ids : array-like of int or str of shape (n_new,), optional
            Unique ids not yet in the dataset, of the dataset's kind (int or str); default
            (int ids only): continue the sequence from the largest id (``n..n+n_new-1`` for
            default ids).
        labels : array-like of shape (n_new,), optional
            Ground-truth labels of the new samples.

        Returns
        -------
        manifest : dict
            The new manifest (its ``version`` is one more than before).

        Raises
        ------
        ArtifactNotFoundError
            If the dataset does not exist.
        ValueError
            If the batch does not match the dataset (the message names the view and both
            counts) or an id is repeated or already present.
        RecordConflictError
            If another process appended meanwhile (nothing is written; retry).
        """
        manifest = self.manifest(name)
        views = as_stored(Xs)
        check_fits(manifest, views)
        version = manifest.pop("version")
        return self._add_batch(manifest, views, ids, labels, expected_version=version)

    def _add_batch(
        self,
        manifest: dict[str, Any],
        views: list[Any],
        ids: Any,
        labels: Any,
        *,
        expected_version: int,
    ) -> dict[str, Any]:
        name = manifest["name"]
        n = views[0].shape[0]
        ids = check_ids(manifest, ids, n, lambda: self._ids(manifest, None))
        if labels is not None:
            labels = np.asarray(labels)
            if labels.shape != (n,) or labels.dtype.hasobject:
                raise ValueError(
                    f"labels must be a 1-D numeric or string array of {n} values (one per "
                    f"sample); got shape {labels.shape} and dtype {labels.dtype}."
                )
        put = self.store.put

        def hash_and_put(v: int) -> tuple[Any, dict[str, Any]]:
            # Hash each view once: its artifact key and the batch fingerprint derive from it.
            part = canonical(views[v], f"view {v}")
            return part, put(VIEW_KIND, key_of_canonical([part]), views[v]).to_dict()

        # Views side by side: sha256 and file writes release the GIL, and a large batch is
        # bound by them (hashing, page-cache copies), not by Python.
        with ThreadPoolExecutor(max_workers=min(len(views), IO_THREADS)) as pool:
            view_parts, view_refs = zip(*pool.map(hash_and_put, range(len(views))), strict=True)
        ids_part = canonical(ids, "ids")
        fingerprint = key_of_canonical([{"views": list(view_parts), "ids": ids_part}])
        batch = {
            "batch_id": len(manifest["batches"]),
            "n_samples": n,
            "first_row": manifest["n_samples"],
            "fingerprint": fingerprint,
            "views": list(view_refs),
            "ids": put(IDS_KIND, key_of_canonical([ids_part]), ids).to_dict(),
            "labels": None
            if labels is None
            else put(LABELS_KIND, content_key(labels), labels).to_dict(),
            "created": utc_now(),
        }
        manifest["batches"].append(batch)
        manifest["n_samples"] += n
        if id_kind(ids) == "int":
            manifest["next_id"] = max(manifest["next_id"], int(ids.max()) + 1)
        else:
            manifest["id_kind"] = "str"
        manifest["fingerprint"] = dataset_fingerprint(
            [b["fingerprint"] for b in manifest["batches"]]
        )
        manifest["updated"] = batch["created"]
        version = self.store.write_record(
            RECORD_KIND, name, manifest, expected_version=expected_version
        )
        return {**manifest, "version": version}

    # ------------------------------------------------------------------ reading

    def load_views(
        self, name: str, batches: int | Iterable[int] | None = None, mmap: bool = True,
        rows: bool = False,
    ) -> list[Any]:
        """Load the views of a dataset: the rows of the chosen batches, in the order given.

        Parameters
        ----------
        name : str
            The dataset.
        batches : int or iterable of int, optional
            Batch ids to load (default: all, in order).
        mmap : bool, default=True
            For a single batch of a local store, return dense views as read-only
            ``np.memmap`` (no copy). Several batches are concatenated into one new array
            (read through memory maps, so each byte is copied once).
        rows : bool, default=False
            Return the dense views of a local store as row readers instead
            (:class:`storage.rows.NpyRows`, stacked over several batches): nothing is read
            until rows are asked for, and then only those, so a dataset larger than memory
            can be worked on block by block.

        Returns
        -------
        Xs : list of {ndarray, scipy.sparse.csr_matrix} of shape (n_rows, n_features_v)
            Every file is checksummed before use.

        Raises
        ------
        ArtifactNotFoundError
            If the dataset or one of its files is missing.
        ArtifactIntegrityError
            If a file is corrupt (it is quarantined).
        """
        manifest = self.manifest(name)
        chosen = select(manifest, batches)
        get = self.store.get
        out = []
        for v, view_type in enumerate(manifest["view_types"]):
            refs = [b["views"][v] for b in chosen]
            if rows and view_type == "dense":
                parts = [get(r, rows=True) for r in refs]
                out.append(parts[0] if len(parts) == 1 else StackedRows(parts))
            elif len(refs) == 1:
                out.append(get(refs[0], mmap=mmap))
            elif view_type == "sparse":
                import scipy.sparse as sp

                out.append(sp.csr_matrix(sp.vstack([get(r) for r in refs], format="csr")))
            else:
                out.append(np.concatenate([get(r, mmap=True) for r in refs], axis=0))
        return out

    def load_ids(self, name: str, batches: int | Iterable[int] | None = None) -> np.ndarray:
        """Sample ids (int64 or str, shape (n_rows,)) of the chosen batches, in order."""
        return self._ids(self.manifest(name), batches)

    def _ids(self, manifest: dict[str, Any], batches: int | Iterable[int] | None) -> np.ndarray:
        parts = [self.store.get(b["ids"]) for b in select(manifest, batches)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def load_labels(
        self, name: str, batches: int | Iterable[int] | None = None
    ) -> np.ndarray | None:
        """Labels of the chosen batches, in order, or ``None`` if none of them has labels.

        Raises
        ------
        ValueError
            If only some of the chosen batches have labels (the message lists the others).
        """
        manifest = self.manifest(name)
        chosen = select(manifest, batches)
        missing = [b["batch_id"] for b in chosen if b["labels"] is None]
        if len(missing) == len(chosen):
            return None
        if missing:
            raise ValueError(
                f"Batches {missing} of dataset {name!r} have no labels; choose labelled "
                f"batches with batches=[...]."
            )
        parts = [self.store.get(b["labels"]) for b in chosen]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
