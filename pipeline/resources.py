"""Will a run fit in memory? Checked before any work starts, from shapes and parameters.

:func:`check_memory` compares :func:`fastmice.estimate_memory` (views read from disk a
block of rows at a time, as the pipeline does) with the memory the machine has free, or
a limit the user sets, and refuses a run that would not fit with one line saying what
would: fewer view groups, a smaller k, fewer groups at once, or a bigger machine.
:func:`groups_within_memory` turns the limit into the most view groups to run at once
(:func:`fastmice.groups_within`: the estimate with one group, plus a measured number of bytes
per sample for each further group), for the task runner's workers or
:func:`fastmice.groups_at_once`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import re
from collections.abc import Callable, Sequence

from fastmice import EnsembleParams, MemoryEstimate, estimate_memory, groups_within
from pipeline.params import task_workers

__all__ = ["NotEnoughMemoryError", "available_memory", "check_memory", "fewer_groups_that_fit",
           "groups_within_memory",
           "parse_size"]

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


class NotEnoughMemoryError(RuntimeError):
    """A run would need more memory than the machine has free (or the limit allows)."""


def parse_size(text: str) -> int:
    """``"8G"``, ``"500M"``, ``"1.5g"`` or a number of bytes, as bytes.

    Raises
    ------
    ValueError
        Naming the text.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", str(text).lower())
    if match is None:
        raise ValueError(f"memory size {text!r} is not a size such as 8G, 500M or 2000000000.")
    return int(float(match[1]) * _UNITS[match[2]])


def available_memory() -> int | None:
    """Bytes of memory free for a new process now (Linux ``MemAvailable``), if known."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"


def groups_within_memory(params: EnsembleParams, n_samples: int, n_features: Sequence[int],
                         *, itemsize: int = 4, limit: int | None = None) -> int:
    """The most view groups a pipeline run may compute at once within the memory.

    Parameters
    ----------
    params : EnsembleParams
        Its ``n_jobs`` gives the most (:func:`task_workers`).
    n_samples : int
    n_features : sequence of int
    itemsize : int, default=4
    limit : int, optional
        Bytes the run may use (default: the memory free now; unknown: no fewer groups).

    Returns
    -------
    groups : int
        In ``[1, task_workers(params.n_jobs)]``; for the task runner's workers (``n_jobs``)
        and ``check_memory(groups=...)``. Where even one group does not fit,
        :func:`check_memory` refuses the run.
    """
    workers = task_workers(params.n_jobs)
    budget = available_memory() if limit is None else limit
    if budget is None:
        return workers
    return min(workers, groups_within(budget, params, n_samples, n_features, itemsize=itemsize,
                                      views_in_memory=False))


def check_memory(params: EnsembleParams, n_samples: int, n_features: Sequence[int], *,
                 itemsize: int = 4, limit: int | None = None,
                 groups: int | None = None) -> MemoryEstimate:
    """The run's memory estimate, if it fits; otherwise refuse it, saying what would fit.

    Parameters
    ----------
    params : EnsembleParams
        Its ``n_jobs`` sets how many view groups run at once (:func:`task_workers`).
    n_samples : int
    n_features : sequence of int
    itemsize : int, default=4
        Bytes of a dense view's value.
    limit : int, optional
        Bytes the run may use (default: the memory free now; unknown: no check).
    groups : int, optional
        View groups the run computes at once (default: :func:`task_workers` of
        ``params.n_jobs``; :func:`groups_within_memory` gives the most that fit).

    Returns
    -------
    estimate : MemoryEstimate

    Raises
    ------
    NotEnoughMemoryError
        One line: the estimate, the limit, and the changes that would fit.
    """
    def estimate(p: EnsembleParams) -> MemoryEstimate:
        at_once = task_workers(p.n_jobs) if groups is None or p.n_jobs != params.n_jobs \
            else groups
        return estimate_memory(p, n_samples, n_features, n_workers=at_once, itemsize=itemsize)

    needed = estimate(params)
    budget = available_memory() if limit is None else limit
    if budget is None or needed.total <= budget:
        return needed
    where = "the limit (--memory-limit)" if limit is not None else "free on this machine"
    options = _what_fits(params, budget, estimate)
    fits = f"it would fit with {' or '.join(options)}, or" if options else "it needs"
    raise NotEnoughMemoryError(
        f"this run needs about {needed.describe()} of memory for {n_samples} samples, "
        f"k = {params.n_clusters} and {params.n_groups} view groups, but {_gb(budget)} is "
        f"{where}; {fits} a machine with at least {_gb(needed.total)} free. Nothing was "
        f"written.")


def fewer_groups_that_fit(params: EnsembleParams, n_samples: int, n_features: Sequence[int],
                          *, itemsize: int = 4, limit: int | None = None) -> int | None:
    """The fewer view groups at once a run fits with, by :func:`check_memory`'s estimate;
    None where the workers of ``params.n_jobs`` fit.

    Raises
    ------
    NotEnoughMemoryError
        Where not even one group at a time fits (the message of the run as asked).
    """
    try:
        check_memory(params, n_samples, n_features, itemsize=itemsize, limit=limit)
        return None
    except NotEnoughMemoryError as refused:
        for groups in range(task_workers(params.n_jobs) - 1, 0, -1):
            with contextlib.suppress(NotEnoughMemoryError):
                check_memory(params, n_samples, n_features, itemsize=itemsize, limit=limit,
                             groups=groups)
                return groups
        raise refused from None


def _what_fits(params: EnsembleParams, budget: int,
               estimate: Callable[[EnsembleParams], MemoryEstimate]) -> list[str]:
    """The fewest changes (one group at a time, half the groups, half k) that fit, as
    options with the memory they need: single changes first, then pairs, then all three."""
    halves = [("--n-jobs", "n_jobs", 1), ("--groups", "n_groups", max(1, params.n_groups // 2))]
    if isinstance(params.n_clusters, int):  # "auto": k is not the user's to halve
        halves.append(("--k", "n_clusters", max(2, params.n_clusters // 2)))
    changes = [(option, name, value) for option, name, value in halves
               if getattr(params, name) != value]
    for size in range(1, len(changes) + 1):
        options = []
        for combo in itertools.combinations(changes, size):
            smaller = estimate(dataclasses.replace(
                params, **{name: value for _, name, value in combo}))
            if smaller.total <= budget:
                options.append(" ".join(f"{option} {value}" for option, _, value in combo)
                               + f" ({_gb(smaller.total)})")
        if options:
            return options
    return []
