"""Per-process memo of what was computed from a file, valid while the file is unchanged.

Artifacts are immutable: published by a rename, never written in place. A file whose inode,
size, mtime and ctime are those it had when this process read it has the same bytes (any
write or replacement changes one of them), so a digest of a 1 GB view read twenty times is
computed once. As git does for its index, a file changed less than ``RACY_NS`` before it was
read is not remembered: file times tick coarsely, and a write in the same tick would keep
them. A new process always computes again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["FileMemo"]

T = TypeVar("T")
RACY_NS = 2_000_000_000


class FileMemo:
    """``memo(fd, path, compute)``: ``compute()``, remembered for the file's identity."""

    def __init__(self, max_entries: int = 65536) -> None:
        self._values: dict[tuple, Any] = {}
        self._max = max_entries

    @staticmethod
    def _identity(path: str, st: os.stat_result) -> tuple:
        return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def remember(self, path: str, value: Any) -> None:
        """Remember ``value`` for the file at ``path`` as it is now (its content known exactly,
        e.g. hashed while this process wrote it, and never to be written again)."""
        if len(self._values) >= self._max:
            self._values.clear()
        self._values[self._identity(path, os.stat(path))] = value

    def __call__(self, fd: int, path: str, compute: Callable[[], T]) -> T:
        st = os.fstat(fd)
        identity = self._identity(path, st)
        if identity in self._values:
            return self._values[identity]
        started = time.time_ns()
        value = compute()
        if max(st.st_mtime_ns, st.st_ctime_ns) < started - RACY_NS:
            if len(self._values) >= self._max:
                self._values.clear()
            self._values[identity] = value
        return value
