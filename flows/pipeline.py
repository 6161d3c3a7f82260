"""The fastmice Prefect flows: ``cluster_flow``, ``extend_flow`` and ``recluster_flow``.

Each builds a plan (:mod:`tasks.runs`) and executes it the same way: draw the view groups;
per group, fanned out on the flow's task runner, build the graph on the anchor batches,
place every later batch with the group's anchors and compute the base clustering; wait for
every group; then the consensus, the labels table, the run record and Prefect artifacts.

Every task reuses what the store already holds, so a rerun computes nothing, a run killed
at any point resumes with the unfinished groups only, ``extend`` computes only the new
groups and ``recluster`` only the new batch's graph rows (plus the base clusterings and
consensus, which cover every sample). The labels equal ``fastmice.FastMICE(...).fit(Xs)
.labels_`` on the same data and seed, whatever the task runner.

The task runner is the caller's choice: ``cluster_flow.with_options(task_runner=...)``
(default ``ThreadPoolTaskRunner(max_workers=2)``; ``prefect_dask.DaskTaskRunner`` runs the
fan-out on Dask).
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow, get_run_logger
from prefect.futures import PrefectFuture, as_completed, wait
from prefect.task_runners import ThreadPoolTaskRunner

import fastmice
from flows.progress import GroupProgress
from storage import open_store
from storage.base import utc_now
from tasks import consensus as consensus_tasks
from tasks import graphs, results, specs
from tasks._prefect import for_store
from tasks.runs import new_run_id, plan_cluster, plan_extend, plan_recluster

__all__ = ["GroupsFailedError", "cluster_flow", "extend_flow", "recluster_flow", "run_plan"]


class GroupsFailedError(RuntimeError):
    """Some view groups failed; the others are stored, and a rerun resumes with the failed."""


def _did_work(future: PrefectFuture) -> bool:
    """Whether a finished task run computed something (not a Prefect cache hit, not skipped)."""
    return future.state.name != "Cached" and bool(future.result()["computed"])


def _first_failure(named: list[tuple[str, PrefectFuture]]) -> str | None:
    """``"<task run>: <state message>"`` of the first unfinished of a group's task runs."""
    for name, future in named:
        state = future.state
        if not state.is_completed():
            return f"{name}: {state.message or state.name}"
    return None


def run_plan(store_url: str, plan: dict[str, Any], run_name: str | None = None) -> dict:
    """Execute a plan inside a flow run; return the run summary.

    Parameters
    ----------
    store_url : str
        Absolute store URL (``store.url``), passed to every task.
    plan : dict
        From :func:`tasks.runs.plan_cluster`, :func:`~tasks.runs.plan_extend` or
        :func:`~tasks.runs.plan_recluster`.
    run_name : str, optional
        The run id to use (default: generated).

    Returns
    -------
    summary : dict
        :func:`tasks.results.run_summary` of the run record.

    Raises
    ------
    GroupsFailedError
        If some view groups failed (after every other group has finished and been stored).
    """
    logger = get_run_logger()
    started, created = time.time(), utc_now()
    store = open_store(store_url)
    run_id = new_run_id(store, plan["dataset"], run_name)
    params, anchor_data, data = plan["params"], plan["anchor_data"], plan["data"]
    n_groups = params["n_groups"]
    draw, build, transform, base, consensus, write, report = (
        for_store(t, store_url) for t in (
            specs.draw_groups, graphs.build_graph, graphs.transform_graph,
            consensus_tasks.base_cluster, consensus_tasks.consensus, results.write_results,
            results.report_run))
    logger.info("run %s (%s): dataset %s, %d samples, k=%d, %d view groups", run_id,
                plan["kind"], data["name"], data["n_samples"], params["n_clusters"], n_groups)

    group_specs = draw(store_url, anchor_data, params, 0, n_groups)
    anchor_ids = {b["batch_id"] for b in anchor_data["batches"]}
    later = [b for b in data["batches"] if b["batch_id"] not in anchor_ids]
    # Submitted in dependency order: a thread-pool worker waiting for an upstream task only
    # ever waits for one submitted before it.
    graph_futures = [build.submit(store_url, anchor_data, spec) for spec in group_specs]
    row_futures = [[transform.submit(store_url, anchor_data, spec, batch, graph)
                    for batch in later] for spec, graph in zip(group_specs, graph_futures,
                                                               strict=True)]
    base_futures = [base.submit(store_url, anchor_data, data, spec, graph, rows)
                    for spec, graph, rows in zip(group_specs, graph_futures, row_futures,
                                                 strict=True)]
    every = [*graph_futures, *(f for rows in row_futures for f in rows), *base_futures]
    progress = GroupProgress(len(every), n_groups,
                             f"fastmice {plan['kind']} {run_id}: {n_groups} view groups")
    bases = {f.task_run_id for f in base_futures}
    for future in as_completed(every):
        progress.step(future.task_run_id in bases)
    wait(every)  # sets each future's final state (as_completed does not)

    failures = []
    for g, (graph, rows, base_future) in enumerate(zip(graph_futures, row_futures,
                                                       base_futures, strict=True)):
        named = [(f"graph-{g}", graph),
                 *((f"rows-{g}-batch-{b['batch_id']}", f) for b, f in zip(later, rows,
                                                                         strict=True)),
                 (f"base-{g}", base_future)]
        if message := _first_failure(named):
            failures.append((group_specs[g]["group_index"], message))
    if failures:
        detail = "; ".join(f"group {g} ({msg})" for g, msg in failures[:5])
        raise GroupsFailedError(
            f"{len(failures)} of {n_groups} view groups failed: {detail}. The other groups "
            f"are stored; rerun the same command to resume.")
    groups_seconds = time.time() - started

    built = [_did_work(f) for f in graph_futures]
    placed = [[_did_work(f) for f in rows] for rows in row_futures]
    clustered = [_did_work(f) for f in base_futures]
    computed = [b or any(p) or c for b, p, c in zip(built, placed, clustered, strict=True)]
    base_refs = [f.result() for f in base_futures]
    consensus_state = consensus(store_url, base_refs, params["n_clusters"], params["seed"],
                                return_state=True)
    consensus_ref = consensus_state.result()
    groups = []
    for graph, rows, base_ref, did in zip(graph_futures, row_futures, base_refs, computed,
                                          strict=True):
        graph_ref = graph.result()
        row_refs = {**graph_ref["rows"], **{str(r.result()["batch_id"]): r.result()["rows"]
                                             for r in rows}}
        groups.append({"group": graph_ref["group"], "anchors": graph_ref["anchors"],
                       "rows": row_refs, "labels": base_ref["labels"],
                       "partition": base_ref["partition"], "computed": did})
    n_rows = sum(len(rows) for rows in placed)
    run = {
        "run_id": run_id,
        "kind": plan["kind"],
        "parent_run": plan["parent_run"],
        "created": created,
        "started_unix": started,
        "store": store_url,
        "dataset": data["name"],
        "dataset_version": plan["dataset_version"],
        "dataset_fingerprint": data["fingerprint"],
        "batches": [b["batch_id"] for b in data["batches"]],
        "anchor_batches": sorted(anchor_ids),
        "anchor_fingerprint": anchor_data["fingerprint"],
        "n_samples": data["n_samples"],
        "n_views": data["n_views"],
        "n_clusters": params["n_clusters"],
        "n_groups": n_groups,
        "params": params,
        "seed": params["seed"],
        "groups_computed": sum(computed),
        "groups_reused": n_groups - sum(computed),
        "work": {
            "graphs_built": sum(built),
            "row_batches_computed": sum(map(sum, placed)),
            "row_batches_reused": n_rows - sum(map(sum, placed)),
            "base_clusterings": sum(clustered),
            "consensus": consensus_state.name != "Cached" and consensus_ref["computed"],
        },
        "groups": groups,
        "timings": {"groups": round(groups_seconds, 3),
                    "consensus": round(time.time() - started - groups_seconds, 3)},
        "code_version": fastmice.CODE_VERSION,
        "fastmice_version": fastmice.__version__,
    }
    record = write(store_url, run, data, consensus_ref)
    report(record)
    logger.info("run %s: %d view groups computed, %d reused, %.1f s", run_id,
                record["groups_computed"], record["groups_reused"], record["seconds"])
    return results.run_summary(record)


_RUNNER = ThreadPoolTaskRunner(max_workers=2)


@flow(name="fastmice-cluster", flow_run_name="cluster-{dataset}", task_runner=_RUNNER)
def cluster_flow(dataset: str, n_clusters: int, n_groups: int = 20, seed: int = 0,
                 metric: str | list[str] = "euclidean", store_url: str | None = None,
                 run_name: str | None = None, n_anchors: int = 1000,
                 n_neighbors: int = 5) -> dict:
    """Cluster a registered dataset with a new FastMICE ensemble.

    Parameters
    ----------
    dataset : str
        A dataset of the store (see ``fastmice cluster`` / ``DatasetStore.create``).
    n_clusters : int
    n_groups : int, default=20
    seed : int, default=0
        ``random_state`` of :class:`fastmice.FastMICE`.
    metric : str or list of str, default="euclidean"
    store_url : str, optional
        Default: ``$FASTMICE_STORE`` or ``./.fastmice``.
    run_name : str, optional
        Run id (default: ``<dataset>-<yyyymmdd-HHMMSS>-<6 hex>``).
    n_anchors, n_neighbors : int, default=1000, 5

    Returns
    -------
    summary : dict
        ``run_id``, ``dataset``, ``n_samples``, ``n_views``, ``n_clusters``, ``n_groups``,
        ``groups_computed``, ``groups_reused``, ``seconds``, ``labels_path``, ``scores``
        (when the dataset has ground truth), ``work`` and more.
    """
    store = open_store(store_url)
    plan = plan_cluster(store, dataset, n_clusters, n_groups, seed, metric, n_anchors,
                        n_neighbors)
    return run_plan(store.url, plan, run_name)


@flow(name="fastmice-extend", flow_run_name="extend-{run_id}", task_runner=_RUNNER)
def extend_flow(run_id: str, n_groups: int, store_url: str | None = None) -> dict:
    """Add ``n_groups`` view groups to run ``run_id``'s ensemble and recompute the consensus.

    The old groups are reused as they are (group ``g`` depends only on the seed and ``g``);
    only the new ones and the consensus are computed. The result is a new run.

    Parameters
    ----------
    run_id : str
    n_groups : int
        Number of groups to add.
    store_url : str, optional

    Returns
    -------
    summary : dict
        As for :func:`cluster_flow`.
    """
    store = open_store(store_url)
    return run_plan(store.url, plan_extend(store, run_id, n_groups))


@flow(name="fastmice-recluster", flow_run_name="recluster-{dataset}", task_runner=_RUNNER)
def recluster_flow(dataset: str, store_url: str | None = None, refresh_anchors: bool = False,
                   run_name: str | None = None) -> dict:
    """Relabel every sample of ``dataset`` with its latest ensemble after new batches arrived.

    Graph rows of the old batches are reused; the new batches are placed with the anchors the
    ensemble was created with (or, with ``refresh_anchors``, new anchors are drawn from every
    batch, which recomputes everything); the base clusterings and the consensus are
    recomputed over all samples.

    Parameters
    ----------
    dataset : str
    store_url : str, optional
    refresh_anchors : bool, default=False
    run_name : str, optional

    Returns
    -------
    summary : dict
        As for :func:`cluster_flow`.
    """
    store = open_store(store_url)
    return run_plan(store.url, plan_recluster(store, dataset, refresh_anchors), run_name)
