"""The view groups of a run on the task runner, depth first: a group's steps follow each other.

Each group is a chain of task runs: its graph on the anchor batches (``build_graph``), the
rows of each later batch (``transform_graph``), its base clustering (``base_cluster``). At
most as many groups are in flight as the task runner has workers, and a group's next step is
submitted when its previous one has finished. So

* every task submitted can start at once: no worker thread ever waits for an upstream task
  (which would idle a core), and nothing can deadlock however small the pool;
* groups finish one after another, not all at the end: a run killed at 90 % has stored about
  90 % of its groups whole, and the rerun computes only the others.

The order changes no result: each step's output depends only on its inputs' content.
"""

from __future__ import annotations

import contextlib
import queue
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from prefect.futures import PrefectFuture

from fastmice import longest_first
from flows.progress import GroupProgress
from pipeline.plans import Plan
from pipeline.results import GroupOutcome
from storage import DamagedBatchError
from tasks.consensus import base_cluster
from tasks.graphs import build_graph, transform_graph

__all__ = ["GroupsFailedError", "run_groups"]

_PREFECT_SAYS = "Task run encountered an exception "


class GroupsFailedError(RuntimeError):
    """Some view groups failed; the others are stored, and a rerun resumes with the failed."""


@dataclass
class _Group:
    """The task runs of one view group, submitted one after the other."""

    spec: dict[str, Any]
    later: list[dict[str, Any]]
    futures: list[PrefectFuture] = field(default_factory=list)

    @property
    def index(self) -> int:
        return self.spec["group_index"]

    @property
    def n_steps(self) -> int:
        return 2 + len(self.later)

    def step_name(self, i: int) -> str:
        if i == 0:
            return f"graph-{self.index}"
        if i <= len(self.later):
            return f"rows-{self.index}-batch-{self.later[i - 1]['batch_id']}"
        return f"base-{self.index}"

    def submit_next(self, store_url: str, plan: Plan, params: dict[str, Any]) -> PrefectFuture:
        """Submit the group's next step (its inputs are finished futures)."""
        i, spec = len(self.futures), self.spec
        if i == 0:
            future = build_graph.submit(store_url, plan.anchor_data, params, spec)
        elif i <= len(self.later):
            future = transform_graph.submit(store_url, plan.anchor_data, params, spec,
                                            self.later[i - 1], self.futures[0])
        else:
            future = base_cluster.submit(store_url, plan.anchor_data, plan.data, params, spec,
                                         self.futures[0], self.futures[1:],
                                         plan.warm_partition(self.index))
        self.futures.append(future)
        return future

    def failure(self) -> str | None:
        """``"<task run>: <state message>"`` of the step that stopped the group, if any."""
        for i, future in enumerate(self.futures):
            if not future.state.is_completed():
                why = (future.state.message or future.state.name).removeprefix(_PREFECT_SAYS)
                return f"{self.step_name(i)}: {why}"
        return None if len(self.futures) == self.n_steps else f"{self.step_name(0)}: not run"

    def error(self) -> BaseException | None:
        """The exception that stopped the group, if a step raised one."""
        for future in self.futures:
            if not future.state.is_completed():
                with contextlib.suppress(Exception):
                    result = future.state.result(raise_on_failure=False)
                    return result if isinstance(result, BaseException) else None
        return None

    def outcome(self) -> GroupOutcome:
        results = [f.result() for f in self.futures]
        return GroupOutcome(results[0], results[1:-1], results[-1])


def run_groups(store_url: str, plan: Plan, params: dict[str, Any], specs: list[dict[str, Any]],
               width: int, description: str) -> list[GroupOutcome]:
    """Run every group's steps, ``width`` groups at a time (longest first when more than one);
    their outcomes in group order.

    Raises
    ------
    GroupsFailedError
        Naming the failed groups and the step that failed, once every other group has
        finished and been stored (never a cancelled sibling: PREFECT.md section 3.4).
    """
    later = plan.later_batches
    groups = [_Group(spec, later) for spec in specs]
    # Side by side, the groups start longest first (fastmice.longest_first): the last ones
    # to finish then finish together.
    order = longest_first(specs) if width > 1 else range(len(groups))
    waiting = deque(groups[i] for i in order)
    done: queue.SimpleQueue[PrefectFuture] = queue.SimpleQueue()
    running: dict[PrefectFuture, _Group] = {}
    progress = GroupProgress(sum(g.n_steps for g in groups), len(groups), description)

    def submit(group: _Group) -> None:
        future = group.submit_next(store_url, plan, params)
        running[future] = group
        future.add_done_callback(done.put)

    while waiting or running:
        while waiting and len(running) < max(1, width):
            submit(waiting.popleft())
        future = done.get()
        group = running.pop(future)
        future.wait()  # sets the final state (a done callback may come before it)
        finished = len(group.futures) == group.n_steps
        progress.step(group.outcome().work if finished and future.state.is_completed()
                      else None)
        if future.state.is_completed() and not finished:
            submit(group)
    _raise_failures(groups)
    return [g.outcome() for g in groups]


def _raise_failures(groups: list[_Group]) -> None:
    """Raise GroupsFailedError if a group failed; groups failing alike share one mention.

    A damaged input batch is raised as it is: rerunning cannot help, registering the data
    again does (its message says so). So is an I/O error that stopped every failed group
    alike (a full disk): its message names the store and says what to do.
    """
    errors = [error for g in groups if (error := g.error()) is not None]
    for error in errors:
        if isinstance(error, DamagedBatchError):
            raise error
    if errors and all(isinstance(e, OSError) and e.errno and e.errno == errors[0].errno
                      for e in errors):
        raise errors[0]  # the same I/O failure everywhere (a full disk): say it once
    failures: dict[str, list[tuple[int, str]]] = {}
    for g in groups:
        if (message := g.failure()) is not None:
            step, _, why = message.partition(": ")
            failures.setdefault(why, []).append((g.index, step))
    if not failures:
        return
    parts = []
    for why, entries in list(failures.items())[:5]:
        if len(entries) == 1:
            parts.append(f"group {entries[0][0]} ({entries[0][1]}: {why})")
        else:
            indexes = ", ".join(str(index) for index, _ in entries)
            parts.append(f"groups {indexes} ({entries[0][1].split('-')[0]}: {why})")
    n_failed = sum(len(entries) for entries in failures.values())
    raise GroupsFailedError(
        f"{n_failed} of {len(groups)} view groups failed: {'; '.join(parts)}. The other groups "
        f"are stored; rerun the same command to resume.")
