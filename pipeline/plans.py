"""Plans of the three kinds of run: what an ensemble run works on, before it runs.

A *plan* says what a run works on: the parameters (one :class:`fastmice.EnsembleParams`),
the *anchor batches* (the dataset's batches when the ensemble was created, which the anchors
of every view group are drawn from) and the batches to cluster. The flows execute plans;
the command line builds them first to report a bad parameter, an unknown dataset or an
unknown run before anything is written or Prefect is started.

* ``cluster``: a new ensemble on every batch of a dataset;
* ``extend``: a run's ensemble with more view groups, on that run's batches;
* ``recluster``: the latest run's ensemble on every batch of the dataset now (new batches
  are placed with the old anchors unless ``refresh_anchors``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fastmice import EnsembleParams
from pipeline.keys import dataset_ref
from pipeline.params import check_int, check_n_jobs, ensemble_params, params_of
from pipeline.runs import list_runs, read_run
from storage import DatasetStore

__all__ = ["Plan", "cluster_plan", "plan_cluster", "plan_extend", "plan_recluster"]


@dataclass(frozen=True)
class Plan:
    """What a run computes.

    Attributes
    ----------
    kind : {"cluster", "extend", "recluster"}
    dataset : str
    dataset_version : int
        The dataset record's version the plan was made from.
    params : EnsembleParams
        Checked against the anchor batches.
    anchor_data, data : dict
        :func:`pipeline.keys.dataset_ref` of the anchor batches and of the batches to cluster.
    parent_run : str or None
        The run an ``extend`` or ``recluster`` starts from.
    warm_start : dict or None
        For a recluster with new batches: the parent run's base partitions
        (``{"groups": {group index: ref}, "consensus": ref}``), which the base clusterings
        extend to the new samples and the consensus refines, instead of starting anew.
    """

    kind: str
    dataset: str
    dataset_version: int
    params: EnsembleParams
    anchor_data: dict[str, Any]
    data: dict[str, Any]
    parent_run: str | None = None
    warm_start: dict[str, Any] | None = None

    def warm_partition(self, group: int) -> dict[str, Any] | None:
        """The stored partition group ``group`` starts from, if warm-started."""
        return None if self.warm_start is None else self.warm_start["groups"].get(str(group))

    @property
    def later_batches(self) -> list[dict[str, Any]]:
        """The batches of ``data`` that are not anchor batches (placed with the anchors)."""
        anchors = {b["batch_id"] for b in self.anchor_data["batches"]}
        return [b for b in self.data["batches"] if b["batch_id"] not in anchors]


def _plan(kind: str, manifest: dict[str, Any], params: EnsembleParams,
          anchor_batches: Sequence[int], batches: Sequence[int],
          parent_run: str | None) -> Plan:
    return Plan(kind=kind, dataset=manifest["name"], dataset_version=manifest["version"],
                params=params, anchor_data=dataset_ref(manifest, anchor_batches),
                data=dataset_ref(manifest, batches), parent_run=parent_run)


def plan_cluster(store: Any, dataset: str, **params: Any) -> Plan:
    """Plan a new ensemble on every batch of ``dataset``.

    Parameters
    ----------
    store : store
    dataset : str
    **params
        The ensemble's parameters (:func:`pipeline.params.ensemble_params`; ``n_clusters``
        is required, a missing or ``None`` value takes the default).

    Raises
    ------
    ArtifactNotFoundError
        If the dataset does not exist.
    ValueError, TypeError
        For a bad parameter.
    """
    return cluster_plan(DatasetStore(store).manifest(dataset), **params)


def cluster_plan(manifest: dict[str, Any], **params: Any) -> Plan:
    """:func:`plan_cluster` on a manifest already read (``DatasetStore.manifest``)."""
    checked = ensemble_params(manifest["n_samples"], manifest["n_views"], **params)
    batches = [b["batch_id"] for b in manifest["batches"]]
    return _plan("cluster", manifest, checked, batches, batches, None)


def plan_extend(store: Any, run_id: str, n_groups: int, n_jobs: int | None = None) -> Plan:
    """Plan run ``run_id``'s ensemble with ``n_groups`` more view groups, on its batches.

    ``n_jobs``, if given, replaces the run's (it changes no result).

    Raises
    ------
    ArtifactNotFoundError
        If the run (or its dataset) does not exist.
    ValueError, TypeError
        If ``n_groups`` is not an int >= 1.
    """
    extra = check_int("n_groups", n_groups, 1)
    check_n_jobs(n_jobs)
    run = read_run(store, run_id)
    manifest = DatasetStore(store).manifest(run["dataset"])
    params = _with_jobs(params_of(run), n_jobs)
    params = dataclasses.replace(params, n_groups=params.n_groups + extra)
    plan = _plan("extend", manifest, params, run["anchor_batches"], run["batches"], run_id)
    if plan.data["fingerprint"] != run["dataset_fingerprint"]:
        raise ValueError(f"The batches of run {run_id!r} no longer match dataset "
                         f"{run['dataset']!r}; the store was modified outside fastmice.")
    return plan


def plan_recluster(store: Any, dataset: str, refresh_anchors: bool = False,
                   n_jobs: int | None = None, from_scratch: bool = False) -> Plan:
    """Plan the latest run's ensemble on every batch of ``dataset`` as it is now.

    ``n_jobs``, if given, replaces the run's (it changes no result). When batches were added
    since the latest run, it is a warm start: its base clusterings are extended to the new
    samples (the old ones keep their base labels) and its consensus is refined over every
    sample (the labels then depend on that run's partitions too), unless ``from_scratch``
    or ``refresh_anchors`` (new anchors: everything anew). With no new batch, the plan is
    the latest run's own (so everything is reused).

    Raises
    ------
    ArtifactNotFoundError
        If the dataset does not exist.
    ValueError
        If no run has clustered the dataset yet.
    """
    check_n_jobs(n_jobs)
    manifest = DatasetStore(store).manifest(dataset)
    runs = list_runs(store, dataset)
    if not runs:
        raise ValueError(f"Dataset {dataset!r} has no run yet in store {store.url}; create "
                         f"its ensemble with `fastmice cluster` first.")
    latest = runs[-1]
    batches = [b["batch_id"] for b in manifest["batches"]]
    anchors = batches if refresh_anchors else latest["anchor_batches"]
    params = _with_jobs(params_of(latest), n_jobs)
    plan = _plan("recluster", manifest, params, anchors, batches, latest["run_id"])
    if refresh_anchors or from_scratch:
        return plan
    if set(batches) == set(latest["batches"]):  # nothing new: the latest run's plan again
        return dataclasses.replace(plan, warm_start=latest.get("warm_start"))
    if batches[:len(latest["batches"])] != list(latest["batches"]):
        return plan  # its samples are not the first ones (never so with append): anew
    return dataclasses.replace(plan, warm_start={
        "run": latest["run_id"], "consensus": latest["consensus"],
        "groups": {str(g["group"]): g["partition"] for g in latest["groups"]}})


def _with_jobs(params: EnsembleParams, n_jobs: int | None) -> EnsembleParams:
    return params if n_jobs is None else dataclasses.replace(params, n_jobs=n_jobs)
