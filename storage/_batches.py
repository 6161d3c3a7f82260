"""What a dataset batch is made of: stored views, ids, fingerprints (helpers of DatasetStore)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from storage.keys import canonical, canonical_csr, content_key, is_sparse, key_of_canonical
from storage.rows import NpyRows, StackedRows

__all__ = ["as_stored", "batch_fingerprint", "check_fits", "check_ids", "dataset_fingerprint",
           "id_kind", "select", "view_info"]

IO_THREADS = min(4, os.cpu_count() or 1)


def batch_fingerprint(Xs: Sequence[Any], ids: Any) -> str:
    """Fingerprint of one batch: ``content_key({"views": list(Xs), "ids": ids})``.

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix} of shape (n_samples, n_features_v)
    ids : ndarray of shape (n_samples,), int64

    Returns
    -------
    fingerprint : str
        What :meth:`DatasetStore.manifest` lists for the batch, for the same views and ids.
    """
    with ThreadPoolExecutor(max_workers=max(1, min(len(Xs), IO_THREADS))) as pool:
        parts = list(pool.map(lambda v: canonical(Xs[v], f"view {v}"), range(len(Xs))))
    return key_of_canonical([{"views": parts, "ids": canonical(ids, "ids")}])


def dataset_fingerprint(batch_fingerprints: Sequence[str]) -> str:
    """Fingerprint of a dataset: ``content_key(list(batch_fingerprints))`` (in batch order)."""
    return content_key(list(batch_fingerprints))


def as_stored(Xs: Any) -> list[Any]:
    """A batch's views as the store keeps them: C-ordered ndarrays or canonical CSR.

    Only what the store needs to lay out a batch is checked here: a non-empty list of 2-D
    arrays or sparse matrices with the same number of rows (at least one). Whether the
    values suit the algorithm (numeric, finite, features present) is the one view validator's
    job, :func:`fastmice.check_views`, which the pipeline applies before data reach the
    store (``pipeline.ingest.read_data``).
    """
    if isinstance(Xs, np.ndarray) or is_sparse(Xs) or not isinstance(Xs, Sequence):
        raise TypeError(
            f"Xs must be a list of views (one 2-D array or sparse matrix per view); got "
            f"{type(Xs).__name__}. Wrap a single view as [X]."
        )
    if len(Xs) == 0:
        raise ValueError("Xs must hold at least one view; got an empty list.")
    views = [_as_stored_view(X, v) for v, X in enumerate(Xs)]
    if views[0].shape[0] == 0:
        raise ValueError("View 0 has 0 samples; a batch must hold at least one sample.")
    for v, X in enumerate(views[1:], start=1):
        if X.shape[0] != views[0].shape[0]:
            raise ValueError(
                f"View {v} has {X.shape[0]} samples; expected {views[0].shape[0]} "
                f"(the number of samples in view 0)."
            )
    return views


def _as_stored_view(X: Any, v: int) -> Any:
    if is_sparse(X):
        import scipy.sparse as sp

        X = canonical_csr(X)
        if not isinstance(X, sp.csr_matrix):
            X = sp.csr_matrix(X)
    elif isinstance(X, np.ndarray):
        X = np.ascontiguousarray(X)
    elif isinstance(X, NpyRows | StackedRows):
        pass  # read from disk by blocks when hashed and copied into the store
    else:
        raise TypeError(
            f"View {v} is a {type(X).__name__}; expected a numpy array or a scipy.sparse matrix."
        )
    if X.ndim != 2:
        raise ValueError(f"View {v} must be 2-D (n_samples, n_features); got shape {X.shape}.")
    return X


def view_info(X: Any) -> tuple[str, str, int]:
    return ("sparse" if is_sparse(X) else "dense", X.dtype.str, int(X.shape[1]))


def check_fits(manifest: dict[str, Any], views: list[Any]) -> None:
    """Raise unless a new batch has the dataset's views: count, features, dense/sparse, dtype."""
    name = manifest["name"]
    if len(views) != manifest["n_views"]:
        raise ValueError(
            f"The new batch has {len(views)} views; dataset {name!r} has "
            f"{manifest['n_views']} views."
        )
    for v, X in enumerate(views):
        kind, dtype, n_features = view_info(X)
        if n_features != manifest["n_features"][v]:
            raise ValueError(
                f"View {v} of the new batch has {n_features} features; dataset {name!r} "
                f"has {manifest['n_features'][v]} features in view {v}."
            )
        if kind != manifest["view_types"][v]:
            raise ValueError(
                f"View {v} of the new batch is {kind}; dataset {name!r} stores view {v} "
                f"as {manifest['view_types'][v]}."
            )
        if dtype != manifest["dtypes"][v]:
            raise ValueError(
                f"View {v} of the new batch has dtype {np.dtype(dtype)}; dataset {name!r} "
                f"stores {np.dtype(manifest['dtypes'][v])} in view {v} (cast it with "
                f".astype)."
            )


def check_ids(
    manifest: dict[str, Any], ids: Any, n: int, existing: Callable[[], np.ndarray]
) -> np.ndarray:
    """The new batch's ids, unique and new: int64 (default: continue from ``next_id``) or
    fixed-width strings (a dataset holds ids of one kind, :func:`id_kind`)."""
    name = manifest["name"]
    kind = manifest.get("id_kind", "int")
    if ids is None:
        if kind == "str" and manifest["batches"]:
            raise ValueError(f"Dataset {name!r} has string sample ids; give the new batch's "
                             f"ids too (its id column).")
        start = manifest["next_id"]
        return np.arange(start, start + n, dtype=np.int64)
    ids = _as_ids(ids)
    if ids.shape != (n,):
        raise ValueError(f"ids must have shape ({n},) (one per sample); got {ids.shape}.")
    if manifest["batches"] and id_kind(ids) != kind:
        raise ValueError(f"The new batch has {id_kind(ids)} sample ids; dataset {name!r} has "
                         f"{kind} ids.")
    unique, counts = np.unique(ids, return_counts=True)
    if unique.size != n:
        repeated = unique[counts > 1]
        raise ValueError(
            f"ids of the new batch repeat {repeated.size} value(s), such as "
            f"{repeated[:5].tolist()}; sample ids must be unique."
        )
    if manifest["batches"]:
        clash = unique[np.isin(unique, existing())]
        if clash.size:
            raise ValueError(
                f"{clash.size} id(s) of the new batch already exist in dataset {name!r}, "
                f"such as {clash[:5].tolist()}; sample ids must be unique"
                + (f" (omit ids to continue from {manifest['next_id']})." if kind == "int"
                   else ".")
            )
    return ids


def _as_ids(ids: Any) -> np.ndarray:
    """Ids as the store keeps them: int64, or fixed-width unicode strings."""
    ids = np.asarray(ids)
    if ids.dtype.kind == "O" and all(isinstance(i, str) for i in ids.ravel()):
        ids = ids.astype(str)
    if ids.dtype.kind == "U":
        if ids.size and (np.char.str_len(ids) == 0).any():
            raise ValueError("ids hold an empty string; every sample needs an id.")
        return ids
    if ids.dtype.kind not in "iu":
        raise TypeError(f"ids must be integers (stored as int64) or strings; got dtype "
                        f"{ids.dtype}.")
    if ids.dtype.kind == "u" and ids.size and ids.max() > np.iinfo(np.int64).max:
        raise ValueError(f"ids must fit in int64; the largest is {ids.max()}.")
    return ids.astype(np.int64)


def id_kind(ids: np.ndarray) -> str:
    """``"str"`` for string ids, ``"int"`` for integer ones."""
    return "str" if ids.dtype.kind == "U" else "int"


def select(manifest: dict[str, Any], batches: int | Iterable[int] | None) -> list[dict]:
    """The manifest entries of the chosen batches, in the order given (all if None)."""
    all_batches = manifest["batches"]
    if batches is None:
        return list(all_batches)
    chosen = [batches] if isinstance(batches, int | np.integer) else list(batches)
    if not chosen:
        raise ValueError("batches is empty; pass None for all batches.")
    for b in chosen:
        if isinstance(b, bool) or not isinstance(b, int | np.integer):
            raise TypeError(f"batches must hold batch ids (int); got {b!r}.")
        if not 0 <= b < len(all_batches):
            raise ValueError(
                f"batches contains {b}; dataset {manifest['name']!r} has batch ids "
                f"0..{len(all_batches) - 1}."
            )
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"batches repeats a batch id: {chosen}.")
    return [all_batches[b] for b in chosen]
