"""What the cached tasks share: the cache-key function, retries and result storage.

Prefect caching is only the fast path (PREFECT.md section 3.2). The artifact store is the
source of truth: a task body first checks whether its outputs are stored and skips the work
if they are, which is what makes a run killed at any point resumable. The Prefect cache
record of a task is named after the same content key as its artifacts, and the cache-key
function deletes a record whose artifacts are gone (so a stale record never hides a missing
artifact: PREFECT.md lesson iii).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from prefect.cache_policies import NO_CACHE, CachePolicy

from storage import ArtifactIntegrityError, LocalStore, open_store

__all__ = [
    "RESULTS_DIR",
    "TASK_OPTIONS",
    "StoreCacheKey",
    "for_store",
    "register_cache_key",
    "retry_on_io",
]

#: Folder of the store (local stores only) holding Prefect's cache records (hidden, so
#: that the store does not list it as an artifact kind).
RESULTS_DIR = ".prefect-results"

Outputs = Callable[[Mapping[str, Any]], tuple[str, list[tuple[str, str]]]]


def results_dir(store_url: str) -> Path | None:
    """Where Prefect keeps the cache records of a store (``None``: the store is not local)."""
    store = open_store(store_url)
    return store.root / RESULTS_DIR if isinstance(store, LocalStore) else None


class StoreCacheKey:
    """A ``cache_key_fn`` naming a task's Prefect record after its content key.

    Parameters
    ----------
    prefix : str
        Readable prefix of the record name (``"graph"``, ``"base"``...).
    outputs : callable
        ``outputs(parameters) -> (key, [(kind, key), ...])``: the task's content key and the
        artifacts its body writes, computed from the task's parameters alone.
    """

    def __init__(self, prefix: str, outputs: Outputs) -> None:
        self.prefix = prefix
        self.outputs = outputs

    def __repr__(self) -> str:
        return f"StoreCacheKey({self.prefix!r})"

    def __call__(self, context: Any, parameters: Mapping[str, Any]) -> str:
        """Return ``"<prefix>-<key>"``, first deleting the record if an output is missing."""
        key, outputs = self.outputs(parameters)
        record = f"{self.prefix}-{key}"
        store = open_store(parameters["store_url"])
        if not all(store.exists(kind, k) for kind, k in outputs):
            folder = results_dir(parameters["store_url"])
            if folder is not None:
                (folder / record).unlink(missing_ok=True)
        return record


def retry_on_io(task: Any, task_run: Any, state: Any) -> bool:
    """Retry a failed task only for I/O errors; a ``ValueError`` does not fix itself."""
    try:
        state.result()
    except (OSError, ArtifactIntegrityError):
        return True
    except Exception:
        return False
    return False


#: Decorator options of every pipeline task: no caching until :func:`for_store` turns the
#: store-keyed cache on for a run, retries for I/O errors only.
TASK_OPTIONS: dict[str, Any] = {
    "cache_policy": NO_CACHE,
    "retries": 1,
    "retry_delay_seconds": 1,
    "retry_condition_fn": retry_on_io,
}

_CACHE_KEYS: dict[str, StoreCacheKey] = {}


def register_cache_key(task_name: str, cache_key_fn: StoreCacheKey) -> None:
    """Declare the cache-key function :func:`for_store` gives the task named ``task_name``."""
    _CACHE_KEYS[task_name] = cache_key_fn


def for_store(task: Any, store_url: str) -> Any:
    """The task configured to cache its results by content key for the store ``store_url``.

    On a local store Prefect keeps its cache records in ``<store>/.prefect-results`` (a
    ``pathlib.Path``: no registered block needed) as small JSON files; with any other store,
    or for a task without a registered key, the task is returned uncached and the store
    checks in its body do all the reuse.
    """
    folder = results_dir(store_url)
    key_fn = _CACHE_KEYS.get(task.name)
    if folder is None or key_fn is None:
        return task
    # A policy rather than cache_key_fn: the task's NO_CACHE policy is then replaced, not
    # overridden with a warning.
    return task.with_options(cache_policy=CachePolicy.from_cache_key_fn(key_fn),
                             persist_result=True, result_serializer="json",
                             result_storage=folder)
