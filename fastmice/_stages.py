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
several threads at once add up their own wall times (thread-seconds); with ``clock="cpu"``
a recorder adds up the threads' CPU seconds instead (a thread waiting for the cores, or for
another, counts wall time but no CPU time). Work a thread runs for another thread's stage
(:func:`continued`, the helpers of ``fastmice._parallel``) counts for that stage, and for
its enclosing stages. A recorder opened with ``this_thread=True`` sees only the stages of
the thread that opened it and of the work run for them (a pipeline task running beside
others).
Nothing is recorded, and the cost is one global read per stage, outside ``record_stages``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["context", "continued", "record_stages", "stage"]

_lock = threading.Lock()
_recorders: list[tuple[dict[str, float], int | None, bool]] = []
_open = threading.local()


@contextmanager
def record_stages(this_thread: bool = False, clock: str = "wall"
                  ) -> Iterator[dict[str, float]]:
    """Collect ``{stage: seconds}`` of every :func:`stage` entered meanwhile.

    Parameters
    ----------
    this_thread : bool, default=False
        Only the stages of the calling thread (default: of every thread).
    clock : {"wall", "cpu"}, default="wall"
        Each thread's wall seconds in the stage, or its CPU seconds.
    """
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock={clock!r}; expected 'wall' or 'cpu'.")
    seconds: dict[str, float] = {}
    entry = (seconds, threading.get_ident() if this_thread else None, clock == "cpu")
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
    started, cpu_started = time.perf_counter(), time.thread_time()
    try:
        yield
    finally:
        _open.name = outer
        _add((full,), time.perf_counter() - started, time.thread_time() - cpu_started,
             getattr(_open, "owner", None) or threading.get_ident())


def _add(names: tuple[str, ...], wall: float, cpu: float, thread: int) -> None:
    with _lock:
        for seconds, owner, on_cpu in _recorders:
            if owner is None or owner == thread:
                for full in names:
                    seconds[full] = seconds.get(full, 0.0) + (cpu if on_cpu else wall)


def context() -> tuple[str | None, int]:
    """The calling thread's open stage and the thread it counts for (see :func:`continued`)."""
    return getattr(_open, "name", None), getattr(_open, "owner", None) or threading.get_ident()


@contextmanager
def continued(opened: tuple[str | None, int]) -> Iterator[None]:
    """Run work for the stage of another thread (its :func:`context`): the time counts for
    that stage and the stages around it, and stages entered inside are named after it."""
    name, owner = opened
    _open.name, _open.owner = name, owner
    if not _recorders or name is None:
        try:
            yield
        finally:
            _open.name = _open.owner = None
        return
    started, cpu_started = time.perf_counter(), time.thread_time()
    try:
        yield
    finally:
        _open.name = _open.owner = None
        parts = name.split("/")
        _add(tuple("/".join(parts[:i]) for i in range(1, len(parts) + 1)),
             time.perf_counter() - started, time.thread_time() - cpu_started, owner)
