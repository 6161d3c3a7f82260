"""Seconds spent per stage of a fit (anchors, search, graph, eigen, k-means...), on request.

>>> from fastmice._stages import record_stages, stage
>>> with record_stages() as seconds:
...     with stage("anchors"):
...         pass
...     with stage("consensus"), stage("eigen"):
...         pass
>>> sorted(seconds)
['anchors', 'consensus', 'consensus/eigen']

A stage entered inside another (in the same thread) is named after both. Stages running in
several threads at once add up their own wall times (thread-seconds). A recorder opened with
``this_thread=True`` sees only the stages of the thread that opened it (a pipeline task
running beside others).
Nothing is recorded, and the cost is one global read per stage, outside ``record_stages``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["record_stages", "stage"]

_lock = threading.Lock()
_recorders: list[tuple[dict[str, float], int | None]] = []
_open = threading.local()


@contextmanager
def record_stages(this_thread: bool = False) -> Iterator[dict[str, float]]:
    """Collect ``{stage: seconds}`` of every :func:`stage` entered meanwhile.

    Parameters
    ----------
    this_thread : bool, default=False
        Only the stages of the calling thread (default: of every thread).
    """
    seconds: dict[str, float] = {}
    entry = (seconds, threading.get_ident() if this_thread else None)
    with _lock:
        _recorders.append(entry)
    try:
        yield seconds
    finally:
        with _lock:
            _recorders.remove(entry)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the enclosed work as stage ``name`` (for the active recorders, if any)."""
    if not _recorders:
        yield
        return
    outer = getattr(_open, "name", None)
    full = name if outer is None else f"{outer}/{name}"
    _open.name = full
    started = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - started
        _open.name = outer
        thread = threading.get_ident()
        with _lock:
            for seconds, owner in _recorders:
                if owner is None or owner == thread:
                    seconds[full] = seconds.get(full, 0.0) + elapsed
