"""A Prefect progress artifact over a run's view groups, passed on to in-process listeners."""

from __future__ import annotations

from typing import Any

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from pipeline.progress import notify

__all__ = ["GroupProgress"]


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
        self.n_steps, self.n_groups = n_steps, n_groups
        self.steps_done = self.groups_done = 0
        self._artifact: Any = create_progress_artifact(0.0, description=description)
        notify(0, n_steps, 0, n_groups)

    def step(self, group_done: bool) -> None:
        """Count one finished task run (``group_done``: it was a base clustering)."""
        self.steps_done += 1
        self.groups_done += int(group_done)
        update_progress_artifact(self._artifact, 100.0 * self.steps_done / max(self.n_steps, 1))
        notify(self.steps_done, self.n_steps, self.groups_done, self.n_groups)
