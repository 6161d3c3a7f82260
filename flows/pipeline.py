"""The fastmice Prefect flows: ``cluster_flow``, ``extend_flow`` and ``recluster_flow``.

Each builds a plan (:mod:`pipeline.plans`) and runs it with :func:`run_plan`: draw the view
groups; per group, fanned out on the flow's task runner depth first (:mod:`flows.groups`:
a group's steps follow each other, as many groups at once as the runner has workers), build
the graph on the anchor batches, place every later batch with the group's anchors and
compute the base clustering; wait for every group; then the consensus, and the results
(labels table, scores, run record, Prefect artifacts: a summary, the scores, the cluster
sizes and the run's report, :mod:`pipeline.report`).

Every task reuses what the store already holds (:mod:`pipeline.reuse`), so a rerun computes
nothing, a run killed at any point resumes with the unfinished groups only, ``extend``
computes only the new groups and ``recluster`` only the new batch's graph rows, its base
labels and the consensus over every sample. The labels equal
``fastmice.FastMICE(...).fit(Xs).labels_`` on the same data and parameters, whatever the
task runner.

The task runner is the caller's choice: ``cluster_flow.with_options(task_runner=
flows.runners.task_runner(n_jobs, dask_address))`` (the command line and the inbox flow do
so); a flow called as it is runs on the default pool (``task_runner()``).
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow, get_run_logger
from prefect.context import FlowRunContext

from flows.groups import GroupsFailedError, run_groups
from flows.progress import stage
from flows.runners import runner_width, task_runner
from pipeline.params import PARAM_NAMES
from pipeline.plans import Plan, plan_cluster, plan_extend, plan_recluster
from pipeline.results import run_record
from pipeline.runs import new_run_id, run_summary
from storage import open_store, utc_now
from storage.activity import working
from tasks.consensus import consensus
from tasks.results import report_artifact, report_run, write_results
from tasks.specs import draw_groups

__all__ = ["GroupsFailedError", "cluster_flow", "extend_flow", "recluster_flow", "run_plan"]


def run_plan(store_url: str, plan: Plan, run_name: str | None = None) -> dict:
    """Execute a plan inside a flow run; return the run summary.

    Parameters
    ----------
    store_url : str
        Absolute store URL (``store.url``), passed to every task.
    plan : Plan
        From :func:`pipeline.plans.plan_cluster`, :func:`~pipeline.plans.plan_extend` or
        :func:`~pipeline.plans.plan_recluster`.
    run_name : str, optional
        The run id to use (default: generated).

    Returns
    -------
    summary : dict
        :func:`pipeline.runs.run_summary` of the run record.

    Raises
    ------
    GroupsFailedError
        If some view groups failed (after every other group has finished and been stored).
    """
    started, created = time.time(), utc_now()
    store = open_store(store_url)
    run_id = new_run_id(store, plan.dataset, run_name)
    with working(store, f"run {run_id}"):  # no garbage collection until its record is written
        record = _execute(store_url, plan, run_id, started, created)
    get_run_logger().info("run %s: %d view groups computed, %d reused, %.1f s", run_id,
                          record["groups_computed"], record["groups_reused"], record["seconds"])
    return run_summary(record)


def _execute(store_url: str, plan: Plan, run_id: str, started: float,
             created: str) -> dict[str, Any]:
    """The groups, the consensus and the results of a run; its record."""
    params, n_groups = plan.params.to_dict(), plan.params.n_groups
    get_run_logger().info("run %s (%s): dataset %s, %d samples, k=%s, %d view groups", run_id,
                          plan.kind, plan.dataset, plan.data["n_samples"],
                          plan.params.n_clusters, n_groups)
    specs = draw_groups(store_url, plan.anchor_data, params, 0, n_groups)
    context = FlowRunContext.get()
    width = runner_width(context.task_runner if context else None, plan.params.n_jobs)
    outcomes = run_groups(store_url, plan, params, specs, width,
                          f"fastmice {plan.kind} {run_id}: {n_groups} view groups")
    groups_seconds = time.time() - started
    stage("consensus", "refined from the previous run's" if plan.warm_start else "")
    agreed = consensus(store_url, [outcome.base for outcome in outcomes], params,
                       plan.warm_start and plan.warm_start["consensus"], plan.data,
                       plan.anchor_data)
    stage("writing")
    record = write_results(store_url, run_record(plan, run_id, store_url, outcomes, agreed,
                                                 started, created, groups_seconds), plan.data)
    report_run(record)
    report_artifact(store_url, run_id, plan.dataset)
    stage("done")
    return record


def _given(values: dict[str, Any]) -> dict[str, Any]:
    """The ensemble parameters among a flow's arguments (``None``: not given)."""
    return {name: values[name] for name in PARAM_NAMES}


@flow(name="fastmice-cluster", flow_run_name="cluster-{dataset}", task_runner=task_runner())
def cluster_flow(dataset: str, n_clusters: int | str, n_groups: int | None = None,
                 n_anchors: int | None = None, n_neighbors: int | None = None,
                 feature_ratio: list[float] | None = None,
                 base_clusters: list[float] | None = None, metric: str | list[str] | None = None,
                 random_state: int | None = None, n_jobs: int | None = None,
                 store_url: str | None = None, run_name: str | None = None,
                 mode: str | None = None) -> dict:
    """Cluster a registered dataset with a new FastMICE ensemble.

    Parameters
    ----------
    dataset : str
        A dataset of the store (see ``fastmice cluster`` / ``DatasetStore.create``).
    n_clusters, n_groups, n_anchors, n_neighbors, feature_ratio, base_clusters, metric, \
random_state, n_jobs, mode
        The parameters of :class:`fastmice.FastMICE`; ``None`` (or absent) takes the default
        (``random_state``: the pipeline's fixed seed; ``mode``: "best"; ``metric`` may
        be comma-separated; ``n_jobs`` is recorded, and sizes the task runner when the
        caller builds it with :func:`flows.runners.task_runner`).
    store_url : str, optional
        Default: ``$FASTMICE_STORE`` or ``./.fastmice``.
    run_name : str, optional
        Run id (default: ``<dataset>-<yyyymmdd-HHMMSS>-<6 hex>``).

    Returns
    -------
    summary : dict
        ``run_id``, ``dataset``, ``n_samples``, ``n_views``, ``n_clusters``, ``n_groups``,
        ``groups_computed``, ``groups_reused``, ``seconds``, ``labels_path``, ``scores``
        (when the dataset has ground truth), ``work`` and more.
    """
    store = open_store(store_url)
    plan = plan_cluster(store, dataset, **_given(locals()))
    return run_plan(store.url, plan, run_name)


@flow(name="fastmice-extend", flow_run_name="extend-{run_id}", task_runner=task_runner())
def extend_flow(run_id: str, n_groups: int, store_url: str | None = None,
                n_jobs: int | None = None) -> dict:
    """Add ``n_groups`` view groups to run ``run_id``'s ensemble and recompute the consensus.

    The old groups are reused as they are (group ``g`` depends only on the seed and ``g``);
    only the new ones and the consensus are computed. The result is a new run.

    Parameters
    ----------
    run_id : str
    n_groups : int
        Number of groups to add.
    store_url : str, optional
    n_jobs : int, optional
        Replaces the run's (see :func:`cluster_flow`).

    Returns
    -------
    summary : dict
        As for :func:`cluster_flow`.
    """
    store = open_store(store_url)
    return run_plan(store.url, plan_extend(store, run_id, n_groups, n_jobs))


@flow(name="fastmice-recluster", flow_run_name="recluster-{dataset}", task_runner=task_runner())
def recluster_flow(dataset: str, store_url: str | None = None, refresh_anchors: bool = False,
                   run_name: str | None = None, n_jobs: int | None = None,
                   from_scratch: bool = False) -> dict:
    """Relabel every sample of ``dataset`` with its latest ensemble after new batches arrived.

    Graph rows of the old batches are reused; the new batches are placed with the anchors the
    ensemble was created with; the latest run's base clusterings are extended to the new
    samples (each goes to its group's nearest base centre; the old samples keep their base
    labels) and its consensus is refined over all samples (a warm start). With
    ``from_scratch`` they are computed anew instead; with ``refresh_anchors`` new anchors
    are drawn from every batch, which recomputes everything (as a fresh run on the union).

    Parameters
    ----------
    dataset : str
    store_url : str, optional
    refresh_anchors : bool, default=False
    run_name : str, optional
    n_jobs : int, optional
        Replaces the latest run's (see :func:`cluster_flow`).
    from_scratch : bool, default=False

    Returns
    -------
    summary : dict
        As for :func:`cluster_flow`.
    """
    store = open_store(store_url)
    plan = plan_recluster(store, dataset, refresh_anchors, n_jobs, from_scratch)
    return run_plan(store.url, plan, run_name)
