"""Input files the store has seen: a command given the same, unchanged files again need not
read and hash them to know that their batch is stored.

When ``fastmice cluster FILES`` registers (or finds) its dataset, it writes a small ``source``
record named by the files' *stamp* -- each file's resolved path, size, modification and
change times (ns), inode and device, as ``git`` and ``make`` judge a file unchanged -- and
the dataset's name: the batch's fingerprint, the number of samples and views, the number of
classes of the labels and the per-view metric ``"auto"`` chooses. The next ``cluster`` of the
same files looks the stamp up: if the dataset still holds exactly that batch and a stored run
computed the command's plan, it answers without reading the data. Anything else (a touched
or replaced file, another batch, no stored run) takes the usual path, which reads and hashes
the files. ``fastmice rm DATASET`` and ``fastmice gc`` remove the records of datasets that
are gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from storage import ArtifactNotFoundError, DatasetStore
from storage.usage import remove_record

__all__ = ["SOURCE", "forget_sources", "recall_source", "remember_source", "source_stamp"]

#: The record kind of a source's stamp.
SOURCE = "source"
_STAMP_VERSION = 1


def _files(paths: Sequence[str | os.PathLike[str]]) -> list[Path] | None:
    """The files a command reads (a folder: its files, and itself); None if one is missing."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files.append(path)
            files.extend(sorted(f for f in path.iterdir() if f.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            return None
    return files


def source_stamp(paths: Sequence[str | os.PathLike[str]], dataset: str,
                 id_column: str | None = None) -> str | None:
    """The record name of these files registered as ``dataset``; None if they cannot be
    stamped (a missing file)."""
    try:
        files = _files(paths)
        if not files:
            return None
        stats = []
        for f in files:
            st = f.stat()
            stats.append((str(f.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                          st.st_ino, st.st_dev))
    except OSError:
        return None
    text = repr([_STAMP_VERSION, dataset, id_column, stats])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def recall_source(store: Any, stamp: str, dataset: str) -> dict[str, Any] | None:
    """What ``remember_source`` kept for ``stamp``, if the dataset still holds exactly that
    batch and nothing else; else None."""
    try:
        source = store.read_record(SOURCE, stamp)
        manifest = DatasetStore(store).manifest(dataset)
    except (ArtifactNotFoundError, ValueError, OSError):
        return None
    batches = manifest.get("batches") or []
    if source.get("dataset") != dataset or len(batches) != 1 or \
            batches[0].get("fingerprint") != source.get("fingerprint"):
        return None
    return source


def remember_source(store: Any, stamp: str, dataset: str, manifest: dict[str, Any],
                    n_classes: int | None, auto_metrics: list[str | None],
                    mode: str) -> None:
    """Keep what :func:`recall_source` needs for a dataset of one batch (best effort: a
    store that cannot take it only loses the shortcut); ``auto_metrics``: per view, the
    metric ``"auto"`` chose in ``mode`` (the rule depends on it), or None if the view's
    metric was given."""
    batches = manifest.get("batches") or []
    if len(batches) != 1 or store.record_version(SOURCE, stamp):
        return
    with contextlib.suppress(OSError):
        store.write_record(SOURCE, stamp, {
            "dataset": dataset, "fingerprint": batches[0]["fingerprint"],
            "n_samples": manifest["n_samples"], "n_views": manifest["n_views"],
            "n_classes": n_classes, "auto_metrics": list(auto_metrics), "auto_mode": mode})


def forget_sources(store: Any, keep: set[str] | None = None,
                   drop: set[str] | None = None) -> int:
    """Remove the source records of datasets in ``drop``, or not in ``keep``; how many."""
    removed = 0
    for name in store.list_records(SOURCE):
        with contextlib.suppress(ArtifactNotFoundError, ValueError, OSError):
            dataset = store.read_record(SOURCE, name).get("dataset")
            if (drop is not None and dataset in drop) or (keep is not None
                                                         and dataset not in keep):
                removed += remove_record(store, SOURCE, name)
    return removed
