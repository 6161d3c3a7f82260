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
several threads at once add up their own wall times (thread-seconds).
Nothing is recorded, and the cost is one global read per stage, outside ``record_stages``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["record_stages", "stage"]

_lock = threading.Lock()
_recorders: list[dict[str, float]] = []
_open = threading.local()


@contextmanager
def record_stages() -> Iterator[dict[str, float]]:
    """Collect ``{stage: seconds}`` of every :func:`stage` entered in any thread meanwhile."""
    seconds: dict[str, float] = {}
    with _lock:
        _recorders.append(seconds)
    try:
        yield seconds
    finally:
        with _lock:
            _recorders.remove(seconds)


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
        with _lock:
            for seconds in _recorders:
                seconds[full] = seconds.get(full, 0.0) + elapsed
