"""Who is working on a store now: the markers that keep garbage collection away from live runs.

A run writes artifacts that no record refers to until its run record is written at the end,
and it may reuse artifacts no kept record refers to; a registration writes a batch's files
before the dataset record. So whatever writes holds :func:`working` for as long as it works:
a small marker file ``.locks/active/<id>.json`` naming its process (host, boot, pid, start
time, :func:`storage.locks.process_identity`), created under the store lock
:data:`GC_LOCK`. Garbage collection holds that lock while it decides and deletes, and
deletes nothing while :func:`live` finds a marker whose process still runs: a marker left by
a killed process is recognised as such (its process is gone) and removed; one from another
host counts as live for :data:`FOREIGN_SECONDS`.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from storage.locks import LOCKS_DIR, owner_alive, process_identity

__all__ = ["ACTIVE_DIR", "FOREIGN_SECONDS", "GC_LOCK", "live", "working"]

#: Folder of the markers, inside the store's hidden lock folder.
ACTIVE_DIR = f"{LOCKS_DIR}/active"
#: The lock garbage collection holds, and a worker takes to announce itself.
GC_LOCK = "store-gc"
#: How long a marker from another host counts as live (its process cannot be checked).
FOREIGN_SECONDS = 24 * 3600.0


@contextlib.contextmanager
def working(store: Any, what: str) -> Iterator[None]:
    """Announce, while in the block, that this process writes to ``store`` (``what`` says
    what, for messages: ``"run hd-2026..."``); waits while a garbage collection runs."""
    rel = f"{ACTIVE_DIR}/{uuid.uuid4().hex}.json"
    marker = {"owner": process_identity(), "what": what, "started": time.time()}
    with store.lock(GC_LOCK):
        store._write_bytes(rel, json.dumps(marker).encode())
    try:
        yield
    finally:
        store._remove_dir(rel)


def live(store: Any, *, clean: bool = False) -> list[dict[str, Any]]:
    """The markers of the processes working on ``store`` now (``what``, ``owner``,
    ``started``); with ``clean``, remove those whose process is gone."""
    found = []
    for name in store._listdir(ACTIVE_DIR):
        if name.startswith("."):
            continue  # a marker being written
        rel = f"{ACTIVE_DIR}/{name}"
        try:
            marker = json.loads(store._read_bytes(rel))
            alive = owner_alive(marker["owner"])
        except FileNotFoundError:
            continue  # finished meanwhile
        except (ValueError, KeyError, TypeError):
            alive = False  # half-written by a process killed while writing it
            marker = {}
        if alive is None:
            alive = time.time() - float(marker.get("started", 0)) < FOREIGN_SECONDS
        if alive:
            found.append(marker)
        elif clean:
            store._remove_dir(rel)
    return found
