"""``open_store``: a store from a path, an fsspec URL, or the environment."""

from __future__ import annotations

import os
from typing import Any

from storage.base import BaseStore
from storage.fsspec_store import FsspecStore
from storage.local import LocalStore

__all__ = ["DEFAULT_ROOT", "STORE_ENV", "open_store"]

#: Environment variable naming the default store (a path or an fsspec URL).
STORE_ENV = "FASTMICE_STORE"
#: Default store folder, relative to the working directory.
DEFAULT_ROOT = ".fastmice"


def open_store(
    url: str | os.PathLike[str] | BaseStore | None = None, **storage_options: Any
) -> BaseStore:
    """Open an artifact store.

    Parameters
    ----------
    url : str, path-like or store, optional
        ``None``: ``$FASTMICE_STORE`` if set, else ``./.fastmice`` (made absolute now). A path:
        a :class:`LocalStore`. A URL with ``"://"`` (``memory://``, ``file://``, ``s3://``...):
        an :class:`FsspecStore`. A store is returned as is.
    **storage_options
        fsspec options for a URL (credentials, endpoint...).

    Returns
    -------
    store : LocalStore or FsspecStore
        Nothing is created until the first write.
    """
    if isinstance(url, BaseStore):
        return url
    if url is None:
        url = os.environ.get(STORE_ENV) or DEFAULT_ROOT
    if isinstance(url, str) and "://" in url:
        return FsspecStore(url, **storage_options)
    if storage_options:
        raise TypeError(
            f"storage_options {sorted(storage_options)} only apply to fsspec URLs; "
            f"got the local path {os.fspath(url)!r}."
        )
    return LocalStore(url)
