"""Progress of a run, stage by stage, to in-process listeners (Prefect-free).

The flow reports here (``flows.progress.GroupProgress`` also keeps a Prefect progress
artifact); the command line listens, to draw its progress, while it runs the flow in the
same process. Listeners are plain callables given a :class:`RunProgress` snapshot, not flow
parameters, so deployed flows are unaffected.

A run goes through :data:`STAGES`: ``ingest`` (the command registers the data), ``view
groups`` (every group's graph, later-batch rows and base clustering), ``consensus``,
``writing`` (labels table, scores, run record), then ``done``. Each finished view group is
counted by what it took (:data:`GROUP_WORK`): its graph ``built``; its base clustering
``extended`` to new samples (a warm recluster: the old samples keep their base labels);
``reclustered`` anew on stored graph rows (``--from-scratch``, or a resumed group); or
everything ``reused``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

__all__ = ["GROUP_WORK", "STAGES", "RunProgress", "listen", "notify"]

STAGES = ("ingest", "view groups", "consensus", "writing", "done")
GROUP_WORK = ("built", "extended", "reclustered", "reused")


@dataclass(frozen=True)
class RunProgress:
    """Where a run is.

    Attributes
    ----------
    stage : str
        One of :data:`STAGES`.
    steps_done, n_steps : int
        Task runs of the view-group stage finished, and in all (graphs, rows, bases).
    groups_done, n_groups : int
        View groups finished, and in all.
    groups : dict of str to int
        Finished groups by what they took (:data:`GROUP_WORK`).
    detail : str
        What the stage is doing, for display (``"10,000 samples"``, ``"refined"``...).
    """

    stage: str
    steps_done: int = 0
    n_steps: int = 0
    groups_done: int = 0
    n_groups: int = 0
    groups: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GROUP_WORK, 0))
    detail: str = ""

    def step(self, work: str | None) -> RunProgress:
        """One more task run finished; ``work`` (one of :data:`GROUP_WORK`) if it finished
        its group."""
        if work is None:
            return replace(self, steps_done=self.steps_done + 1)
        return replace(self, steps_done=self.steps_done + 1, groups_done=self.groups_done + 1,
                       groups={**self.groups, work: self.groups[work] + 1})


Listener = Callable[[RunProgress], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


@contextlib.contextmanager
def listen(listener: Listener) -> Iterator[None]:
    """Call ``listener(progress)`` on every update while in the block; at its end, call
    ``listener.close()`` if the listener has one (however the block ends)."""
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)
        close = getattr(listener, "close", None)
        if close is not None:
            close()


def notify(progress: RunProgress) -> None:
    """Pass a progress update to every listener."""
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(progress)
