"""The task runner a pipeline flow runs its view groups on, sized by ``n_jobs``."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from prefect.task_runners import ThreadPoolTaskRunner

from pipeline.params import task_workers

__all__ = ["local_cluster", "runner_width", "task_runner"]

#: Dask's nanny starts worker processes with ``MALLOC_TRIM_THRESHOLD_=65536``. Setting it
#: turns off glibc's moving mmap threshold: every array of more than 128 KiB is then mapped
#: and unmapped anew, and its pages faulted in again each time (a 100,000-sample fit: 52x the
#: page faults, 1.5x the time). The worker processes keep glibc's own thresholds.
KEEP_MALLOC = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


def local_cluster(**cluster_kwargs: Any) -> Any:
    """``distributed.LocalCluster(**cluster_kwargs)`` whose worker processes keep glibc's own
    malloc thresholds (:data:`KEEP_MALLOC`); BLAS stays at one thread a worker, as Dask sets."""
    import dask
    from distributed import LocalCluster

    with dask.config.set(KEEP_MALLOC):
        return LocalCluster(**cluster_kwargs)


def task_runner(n_jobs: int | None = None, dask_address: str | None = None) -> Any:
    """A thread pool of :func:`pipeline.params.task_workers` ``(n_jobs)`` threads, or Dask.

    Parameters
    ----------
    n_jobs : int, optional
        The run's ``n_jobs`` (None: the pipeline's default pool).
    dask_address : str, optional
        ``"local"``: a ``LocalCluster`` of that many single-threaded worker processes;
        ``tcp://host:port`` (or ``host:port``): a running scheduler, whose workers are its
        own. Needs the ``dask`` extra (``prefect-dask``).
    """
    workers = task_workers(n_jobs)
    if not dask_address:
        return ThreadPoolTaskRunner(max_workers=workers)
    from prefect_dask import DaskTaskRunner

    if dask_address == "local":
        return DaskTaskRunner(cluster_class=local_cluster, cluster_kwargs={
            "n_workers": workers, "threads_per_worker": 1, "processes": True,
            "dashboard_address": None})
    address = dask_address if "://" in dask_address else f"tcp://{dask_address}"
    return DaskTaskRunner(address=address)


def runner_width(runner: Any, n_jobs: int | None = None) -> int:
    """How many task runs ``runner`` (a flow's task runner) executes at once: a thread pool's
    workers, a Dask cluster's threads, else :func:`~pipeline.params.task_workers` ``(n_jobs)``."""
    workers = getattr(runner, "_max_workers", None)
    if isinstance(workers, int) and 0 < workers < sys.maxsize:
        return workers
    client = getattr(runner, "_client", None)
    if client is not None:
        with contextlib.suppress(Exception):
            return max(1, sum(client.nthreads().values()))
    return task_workers(n_jobs)
