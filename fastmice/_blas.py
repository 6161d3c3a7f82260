"""Run the numerical steps on one BLAS thread.

Two reasons. Reproducibility: OpenBLAS returns bitwise different products for different
thread counts, and a bit can flip a k-means assignment; with one thread per step, labels are
identical whether groups run serially, in threads, in other processes or on Dask workers.
Speed: the eigensolver's tridiagonal reduction is memory-bound, and a second thread there
costs up to 10x in synchronisation on a loaded 2-core machine. Parallelism comes from
running view groups side by side (``n_jobs``, the pipeline's task runner) instead.

BLAS thread counts are process-wide, so concurrent users share one reference-counted limit:
it is set when the first enters and restored when the last leaves. These may be different
Python threads, and threadpoolctl (3.8 and later) lets only one "controlling" thread change
OpenBLAS's pool, silently ignoring the others until the controller lets go; so control is
released after every change, or a thread pool started after the main thread had used this
module would run on the default thread count and give other labels than a serial run.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import threadpoolctl
from threadpoolctl import ThreadpoolController

F = TypeVar("F")

_lock = threading.Lock()
_users = 0
_limiter = None
_controller: ThreadpoolController | None = None


def _release_blas_control() -> None:
    """Let any thread change OpenBLAS's thread count next (a no-op before threadpoolctl 3.8)."""
    controller_class = getattr(threadpoolctl, "OpenBLASController", None)
    release = getattr(controller_class, "clear_controlling_thread", None)
    if release is not None:
        release(force=True)


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Context in which BLAS uses one thread (shared safely between threads)."""
    global _users, _limiter, _controller
    with _lock:
        if _users == 0:
            if _controller is None:
                _controller = ThreadpoolController()
            _release_blas_control()
            _limiter = _controller.limit(limits=1, user_api="blas")
            _release_blas_control()
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _limiter is not None:
                _release_blas_control()
                _limiter.restore_original_limits()
                _release_blas_control()
                _limiter = None


def on_one_blas_thread(function: F) -> F:
    """Decorator: run ``function`` inside :func:`single_threaded_blas`."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with single_threaded_blas():
            return function(*args, **kwargs)

    return wrapper
