"""Run the numerical steps on one BLAS thread.

Two reasons. Reproducibility: OpenBLAS returns bitwise different products for different
thread counts, and a bit can flip a k-means assignment; with one thread per step, labels are
identical whether groups run serially, in threads, in other processes or on Dask workers.
Speed: the eigensolver's tridiagonal reduction is memory-bound, and a second thread there
costs up to 10x in synchronisation on a loaded 2-core machine. Parallelism comes from
running view groups side by side (``n_jobs``, the pipeline's task runner) instead.

BLAS thread counts are process-wide, so concurrent users share one reference-counted limit:
it is set when the first enters and restored when the last leaves.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from threadpoolctl import ThreadpoolController

F = TypeVar("F")

_lock = threading.Lock()
_users = 0
_limiter = None
_controller: ThreadpoolController | None = None


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Context in which BLAS uses one thread (shared safely between threads)."""
    global _users, _limiter, _controller
    with _lock:
        if _users == 0:
            if _controller is None:
                _controller = ThreadpoolController()
            _limiter = _controller.limit(limits=1, user_api="blas")
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _limiter is not None:
                _limiter.restore_original_limits()
                _limiter = None


def on_one_blas_thread(function: F) -> F:
    """Decorator: run ``function`` inside :func:`single_threaded_blas`."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with single_threaded_blas():
            return function(*args, **kwargs)

    return wrapper
