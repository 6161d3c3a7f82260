"""Run BLAS-2-bound LAPACK calls single-threaded.

The dense symmetric eigensolver spends its time in the memory-bound tridiagonal reduction,
where a second BLAS thread buys little and, on a loaded 2-core machine or beside other
worker threads, costs up to 10x in synchronisation. BLAS thread counts are process-wide, so
concurrent users share one reference-counted limit: it is set when the first enters and
restored when the last leaves.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

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
