"""Progress over view groups: a Prefect progress artifact plus in-process listeners.

The flow reports progress here; the command line listens (to draw its progress bar) while
it runs the flow in the same process. Listeners are plain callables, not flow parameters,
so deployed flows are unaffected.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["GroupProgress", "listen", "notify"]

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


class GroupProgress:
    """Progress of a run over its group steps, as a Prefect progress artifact.

    Parameters
    ----------
    n_steps : int
        Task runs to wait for (graphs, later-batch rows and base clusterings of all groups).
    n_groups : int
        View groups (a group is done when its base clustering is).
    description : str
    """

    def __init__(self, n_steps: int, n_groups: int, description: str) -> None:
        from prefect.artifacts import create_progress_artifact

        self.n_steps, self.n_groups = n_steps, n_groups
        self.steps_done = self.groups_done = 0
        self._artifact: Any = create_progress_artifact(0.0, description=description)
        notify(0, n_steps, 0, n_groups)

    def step(self, group_done: bool) -> None:
        """Count one finished task run (``group_done``: it was a base clustering)."""
        from prefect.artifacts import update_progress_artifact

        self.steps_done += 1
        self.groups_done += int(group_done)
        update_progress_artifact(self._artifact, 100.0 * self.steps_done / max(self.n_steps, 1))
        notify(self.steps_done, self.n_steps, self.groups_done, self.n_groups)
