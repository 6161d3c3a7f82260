"""What a storage backend implements: a handful of file primitives on paths under its root.

:class:`~storage.local.LocalStore` and :class:`~storage.fsspec_store.FsspecStore` implement
them; the logic on top is written once, in :mod:`storage.artifacts` (content-addressed
artifacts) and :mod:`storage.records` (versioned named records).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any

__all__ = ["META_FILE", "QUARANTINE", "RECORDS", "Backend"]

META_FILE = "meta.json"
QUARANTINE = "quarantine"
RECORDS = "records"


class Backend(ABC):
    """File primitives on ``"/"``-separated paths relative to the store's root."""

    url: str


    @abstractmethod
    def _publish(
        self, rel_dir: str, filename: str, write: Callable[[IO[bytes]], None], meta: dict[str, Any]
    ) -> None:
        """Write the data file with `write`, add its ``size`` and ``sha256`` to `meta`, write
        ``meta.json``, and make the artifact visible (meta.json last / all at once)."""

    @abstractmethod
    def _read_bytes(self, rel: str) -> bytes:
        """Whole content of a file; ``FileNotFoundError`` if absent."""

    @abstractmethod
    def _file_digest(self, rel: str, expected_size: int | None = None) -> tuple[int, str]:
        """``(size, sha256 hex)`` of a file, streamed; ``FileNotFoundError`` if absent.
        ``expected_size``, the size the file should have, lets an object store read a small
        file in one request."""

    @abstractmethod
    def _verified_source(self, rel: str) -> tuple[Path | IO[bytes], int, str]:
        """What :func:`~storage._codecs.decode` reads, with the size and sha256 it has."""

    @abstractmethod
    def _listdir(self, rel: str) -> list[str]:
        """Names in a folder (empty if it does not exist)."""

    @abstractmethod
    def _file_sizes(self, rel: str) -> dict[str, int]:
        """Size in bytes of every file under a folder, by path relative to it (``"/"``
        separated; symbolic links are not followed); empty if the folder does not exist."""

    @abstractmethod
    def _isfile(self, rel: str) -> bool:
        """Whether a file exists."""

    @abstractmethod
    def _move_dir(self, src: str, dst: str) -> bool:
        """Move a folder to a new place; ``False`` if `src` no longer exists."""

    @abstractmethod
    def _move_file(self, src: str, dst: str) -> bool:
        """Move one file to a new place (folders created); ``False`` if `src` no longer exists."""

    @abstractmethod
    def _modified(self, rel: str) -> float | None:
        """When a file or folder was last modified (Unix time), or None if unknown."""

    @abstractmethod
    def _remove_dir(self, rel: str) -> bool:
        """Delete a folder and its content; ``False`` if it did not exist."""

    @abstractmethod
    def _write_bytes(self, rel: str, data: bytes) -> None:
        """Write a small file atomically (temporary name, then move), replacing any."""

    @abstractmethod
    def _create_exclusive(self, rel: str, data: bytes) -> bool:
        """Create a file with `data` only if it does not exist; ``False`` if it did."""

    @abstractmethod
    def _lock(self, name: str, timeout: float | None) -> AbstractContextManager:
        """Hold the store-wide lock ``name`` (see :mod:`storage.locks`)."""

    @abstractmethod
    def _display(self, rel: str) -> str:
        """A path or URL naming `rel`, for messages."""

    @abstractmethod
    def _local(self, rel: str) -> Path | None:
        """The local filesystem path of `rel`, or ``None`` for non-local stores."""

    # ------------------------------------------------------------------ artifacts
