"""Threads over row blocks and over independent pieces of work, in a fixed order.

numpy's and scipy's heavy kernels (BLAS, sparse products, sorting) release the GIL, so
threads use the cores. Results come back in submission order and the blocks never depend on
the number of threads, so neither does any result.

A :class:`Team` is ``n_threads`` threads that share every piece of parallel work started
inside it, at any depth: the caller of :func:`map_threads` runs its own items and the
team's idle threads help, oldest work first. So the view groups run side by side, and when
fewer groups are left than threads (or in the consensus, which is one piece of work), the
idle threads take row blocks of the pieces still running (a group's search, a k-means
assignment) instead of waiting. Outside a team, :func:`map_threads` starts one for the call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import pairwise

import numpy as np

from fastmice import _stages

__all__ = ["BLOCK_ROWS", "Team", "by_column_parts", "fill_blocks", "map_blocks", "map_threads",
           "team", "team_size"]

#: Rows per block when a rows-by-something matrix is formed: small enough for a block of
#: scores against some hundreds of centres to stay in cache (2,048 rows x 600 float32 is
#: 4.9 MB; 16,384 rows, 39 MB, went to memory and back): at 400k, k = 400, four view groups
#: two at a time took 10.2-10.4 s against 11.9-13.5 s with 16,384, two one after the other
#: 8.3-8.5 s against 8.8-9.6 s.
BLOCK_ROWS = 2048

_local = threading.local()


class _Job:
    """One :func:`map_threads` call: its items, who runs which, and the results."""

    def __init__(self, function: Callable, items: list, at_once: int | None) -> None:
        self.function = function
        self.items = items
        self.results: list = [None] * len(items)
        self.next = 0            # first item nobody has claimed
        self.running = 0
        self.left = len(items)   # items not finished
        self.at_once = at_once   # most items running at once (None: no limit)
        self.errors: dict[int, BaseException] = {}
        self.context = _stages.context()  # the caller's open stage, for the helpers

    def claimable(self) -> bool:
        return self.next < len(self.items) and (self.at_once is None
                                                or self.running < self.at_once)


class Team:
    """``n_threads`` threads (the caller and ``n_threads - 1`` helpers) sharing work.

    Use as a context manager, or through :func:`team`. While it is open, every
    :func:`map_threads` of the threads that run its work posts its items to it.
    """

    def __init__(self, n_threads: int) -> None:
        self.n_threads = max(1, int(n_threads))
        self._lock = threading.Condition()
        self._open: list[_Job] = []  # posting order: the oldest work is helped first
        self._closed = False
        self._helpers = [threading.Thread(target=self._help, daemon=True,
                                          name=f"fastmice-team-{i}")
                         for i in range(self.n_threads - 1)]

    def __enter__(self) -> Team:
        for helper in self._helpers:
            helper.start()
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        for helper in self._helpers:
            helper.join()

    def _help(self) -> None:
        _local.team = self
        while True:
            with self._lock:
                claimed = self._claim_any()
                while claimed is None and not self._closed:
                    self._lock.wait()
                    claimed = self._claim_any()
                if claimed is None:
                    return
            job, i = claimed
            with _stages.continued(job.context):
                self._run(job, i)

    def _claim_any(self) -> tuple[_Job, int] | None:
        for job in self._open:
            if job.claimable():
                return job, self._claim(job)
        return None

    def _claim(self, job: _Job) -> int:
        i = job.next
        job.next += 1
        job.running += 1
        if job.next == len(job.items):
            self._open.remove(job)
        return i

    def _run(self, job: _Job, i: int) -> None:
        try:
            result = job.function(job.items[i])
        except BaseException as error:  # raised in the caller, after the running items
            with self._lock:
                job.errors[i] = error
                if job.next < len(job.items):  # claim nothing more
                    job.left -= len(job.items) - job.next
                    job.next = len(job.items)
                    if job in self._open:
                        self._open.remove(job)
                job.running -= 1
                job.left -= 1
                self._lock.notify_all()
            return
        with self._lock:
            job.results[i] = result
            job.running -= 1
            job.left -= 1
            self._lock.notify_all()

    def map(self, function: Callable, items: Iterable, at_once: int | None = None) -> list:
        """``[function(item) for item in items]`` by the team's threads, in item order.

        The calling thread runs items too. ``at_once`` caps how many run at the same time
        (e.g. view groups, each of which holds its own buffers).
        """
        job = _Job(function, list(items), at_once)
        if not job.items:
            return []
        with self._lock:
            self._open.append(job)
            self._lock.notify_all()
        while True:
            with self._lock:
                while not job.claimable() and job.left > 0:
                    self._lock.wait()
                if job.left == 0:
                    break
                i = self._claim(job)
            self._run(job, i)
        if job.errors:
            raise job.errors[min(job.errors)]
        return job.results


@contextmanager
def team(n_threads: int) -> Iterator[Team | None]:
    """A :class:`Team` of ``n_threads`` for the enclosed work (None if there is one already,
    which the work then shares, or if ``n_threads`` is 1)."""
    if getattr(_local, "team", None) is not None or n_threads <= 1:
        yield None
        return
    with Team(n_threads) as opened:
        _local.team = opened
        try:
            yield opened
        finally:
            _local.team = None


def team_size() -> int:
    """Threads of the team the calling thread works in (1 outside a team)."""
    current = getattr(_local, "team", None)
    return 1 if current is None else current.n_threads


def map_blocks(function: Callable[[slice], object], n_rows: int, n_jobs: int = 1,
               block: int = BLOCK_ROWS) -> list:
    """``[function(rows) for rows in row blocks]``, in ``n_jobs`` threads, in block order.

    Blocks do not depend on ``n_jobs``, so neither does the result.
    """
    blocks = [slice(s, min(s + block, n_rows)) for s in range(0, n_rows, block)]
    return map_threads(function, blocks, n_jobs)


def fill_blocks(out: np.ndarray, function: Callable[[slice], np.ndarray],
                n_jobs: int = 1, block: int = BLOCK_ROWS) -> np.ndarray:
    """``out[rows] = function(rows)`` for each row block of ``out``, in ``n_jobs`` threads:
    :func:`map_blocks` without putting the parts together afterwards. Returns ``out``."""
    def fill(rows: slice) -> None:
        out[rows] = function(rows)

    map_blocks(fill, out.shape[0], n_jobs, block)
    return out


def map_threads(function: Callable, items: Iterable, n_jobs: int,
                at_once: int | None = None) -> list:
    """``[function(item) for item in items]``, in threads, in item order.

    In a team (:func:`team`), by the team's threads whenever ``n_jobs > 1``; outside one,
    by a team of ``n_jobs`` for this call. ``n_jobs <= 1``: one after the other here.
    """
    items = list(items)
    if n_jobs <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    current = getattr(_local, "team", None)
    if current is not None:
        return current.map(function, items, at_once)
    with team(min(n_jobs, len(items))) as opened:
        return opened.map(function, items, at_once)


def by_column_parts(function: Callable[[slice], np.ndarray], n_columns: int,
                    n_jobs: int = 1) -> np.ndarray:
    """``function(slice(None))``, as ``n_jobs`` slices of its result's columns in threads.

    For products of a sparse matrix with a dense one, sliced by the dense one's columns:
    scipy computes every entry the same way whatever the number of columns (checked in
    ``tests/unit/test_scale_paths.py``), so the result is the same as one product's.
    """
    if n_jobs <= 1 or n_columns < 2:
        return function(slice(None))
    bounds = np.linspace(0, n_columns, min(n_jobs, n_columns) + 1).astype(int)
    parts = map_threads(function, [slice(a, b) for a, b in pairwise(bounds)],
                        n_jobs)
    return np.hstack(parts)
