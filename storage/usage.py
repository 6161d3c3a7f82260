"""What a store holds and how much room it takes: every file, classified, in one listing.

:func:`store_usage` walks the store once (one listing per folder on a local disk, a paged
listing on an object store) and sorts each file into an artifact (``<kind>/<key>``), a
record (``records/<kind>/<name>``), quarantine, a leftover of an unfinished write
(``.tmp-*``), the store's locks, or something else. :func:`refs_in` finds the artifact refs
inside a record, :func:`remove_artifact` and :func:`remove_record` delete one (the callers
decide what may go: :mod:`pipeline.housekeeping`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from storage.backend import QUARANTINE, RECORDS

__all__ = ["StoreUsage", "refs_in", "remove_artifact", "remove_record", "store_usage"]


@dataclass
class StoreUsage:
    """Bytes on the store, by what they are.

    Attributes
    ----------
    artifacts : dict of (kind, key) to int
        Each artifact's folder (data file and ``meta.json``).
    records : dict of (kind, name) to int
        Each named record, every version.
    leftovers : dict of str to int
        Temporary entries of unfinished writes (``<kind>/<shard>/.tmp-*``, by folder).
    quarantine, locks, other : int
    """

    artifacts: dict[tuple[str, str], int] = field(default_factory=dict)
    records: dict[tuple[str, str], int] = field(default_factory=dict)
    leftovers: dict[str, int] = field(default_factory=dict)
    quarantine: int = 0
    locks: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        """Every byte of the store."""
        return (sum(self.artifacts.values()) + sum(self.records.values())
                + sum(self.leftovers.values()) + self.quarantine + self.locks + self.other)

    def by_kind(self) -> dict[str, tuple[int, int]]:
        """``{kind: (artifacts, bytes)}``, sorted by kind."""
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for (kind, _), size in self.artifacts.items():
            out[kind][0] += 1
            out[kind][1] += size
        return {kind: (n, size) for kind, (n, size) in sorted(out.items())}


def store_usage(store: Any) -> StoreUsage:
    """Every file of ``store``, sized and classified (see :class:`StoreUsage`)."""
    usage = StoreUsage()
    for path, size in store._file_sizes("").items():
        parts = path.split("/")
        top = parts[0]
        if top == RECORDS and len(parts) >= 4:
            key = (parts[1], parts[2])
            usage.records[key] = usage.records.get(key, 0) + size
        elif top == QUARANTINE:
            usage.quarantine += size
        elif top == ".locks":
            usage.locks += size
        elif top.startswith(".") or len(parts) < 4:
            usage.other += size
        elif parts[1].startswith(".") or parts[2].startswith("."):
            where = "/".join(parts[:3] if not parts[1].startswith(".") else parts[:2])
            usage.leftovers[where] = usage.leftovers.get(where, 0) + size
        else:
            key = (top, parts[2])
            usage.artifacts[key] = usage.artifacts.get(key, 0) + size
    return usage


def refs_in(obj: Any) -> set[tuple[str, str]]:
    """``(kind, key)`` of every artifact ref (a dict of exactly ``kind``, ``key``, ``format``)
    inside a record's content."""
    if isinstance(obj, dict):
        if set(obj) == {"kind", "key", "format"}:
            return {(obj["kind"], obj["key"])}
        return {ref for value in obj.values() for ref in refs_in(value)}
    if isinstance(obj, list):
        return {ref for value in obj for ref in refs_in(value)}
    return set()


def remove_artifact(store: Any, kind: str, key: str) -> bool:
    """Delete an artifact's folder (data and meta); whether it was there."""
    return store._remove_dir(store._artifact_dir(kind, key))


def remove_record(store: Any, kind: str, name: str) -> bool:
    """Delete a named record, every version of it; whether it was there."""
    return store._remove_dir(store._record_dir(kind, name))
