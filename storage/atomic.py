"""The one atomic file writer: a hidden temporary file beside the target, then a rename."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["temporary_name", "write_file_atomic"]


def temporary_name(name: str) -> str:
    """A hidden, unique name for a file or folder being written (``.tmp-<id>-<name>``)."""
    return f".tmp-{uuid.uuid4().hex[:12]}-{name}"


def write_file_atomic(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object], *,
                      sync: bool = True) -> Path:
    """Write ``path`` whole or not at all.

    ``write(f)`` fills a hidden temporary file beside ``path`` (so the rename stays on one
    filesystem), which is flushed (and fsynced with ``sync``) and then renamed over
    ``path`` with :func:`os.replace`. A reader sees the old file or the new one, never half
    of one; a failed write leaves no temporary file behind.

    Parameters
    ----------
    path : path-like
        The file to write; its folder must exist.
    write : callable
        ``write(f)`` writes the content to the binary file object ``f``.
    sync : bool, default=True
        ``os.fsync`` the data before the rename (survives a power cut, not only a crash).

    Returns
    -------
    path : pathlib.Path
    """
    path = Path(path)
    tmp = path.with_name(temporary_name(path.name))
    try:
        with open(tmp, "xb") as f:
            write(f)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
