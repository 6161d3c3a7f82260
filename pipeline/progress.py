"""Progress over view groups, to in-process listeners (Prefect-free).

The flow reports progress here (``flows.progress.GroupProgress`` also keeps a Prefect
progress artifact); the command line listens, to draw its progress bar, while it runs the
flow in the same process. Listeners are plain callables, not flow parameters, so deployed
flows are unaffected.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

__all__ = ["listen", "notify"]

Listener = Callable[[int, int, int, int], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


@contextlib.contextmanager
def listen(listener: Listener) -> Iterator[None]:
    """Call ``listener(steps_done, n_steps, groups_done, n_groups)`` on every update."""
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def notify(steps_done: int, n_steps: int, groups_done: int, n_groups: int) -> None:
    """Pass a progress update to every listener."""
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(steps_done, n_steps, groups_done, n_groups)
