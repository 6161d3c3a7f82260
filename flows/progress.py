"""A Prefect progress artifact over a run's view groups, passed on to in-process listeners."""

from __future__ import annotations

import time
from typing import Any

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from pipeline.progress import RunProgress, notify

__all__ = ["GroupProgress", "stage"]


class GroupProgress:
    """Progress of a run over its group steps, as a Prefect progress artifact.

    Parameters
    ----------
    n_steps : int
        Task runs to wait for (graphs, later-batch rows and base clusterings of all groups).
    n_groups : int
        View groups (a group is done when its base clustering is).
    description : str
    min_interval : float, default=2.0
        Seconds between two updates of the artifact (the last step always updates it): each
        update is a request to the API, and the flow's loop waits for it before it submits
        the next step.
    """

    def __init__(self, n_steps: int, n_groups: int, description: str,
                 min_interval: float = 2.0) -> None:
        self.state = RunProgress("view groups", n_steps=n_steps, n_groups=n_groups)
        self._artifact: Any = create_progress_artifact(0.0, description=description)
        self._min_interval, self._updated = min_interval, time.monotonic()
        notify(self.state)

    def step(self, work: str | None) -> None:
        """Count one finished task run; ``work`` (``"built"``, ``"extended"``,
        ``"reclustered"`` or ``"reused"``) if it finished its group."""
        self.state = self.state.step(work)
        now, last = time.monotonic(), self.state.steps_done >= self.state.n_steps
        if last or now - self._updated >= self._min_interval:
            update_progress_artifact(self._artifact,
                                     100.0 * self.state.steps_done / max(self.state.n_steps, 1))
            self._updated = now
        notify(self.state)


def stage(name: str, detail: str = "") -> None:
    """Tell the listeners that the run has reached stage ``name`` (``"consensus"``,
    ``"writing"``, ``"done"``)."""
    notify(RunProgress(name, detail=detail))
