"""Run records and the plans of the three kinds of run (Prefect-free).

A *plan* says what an ensemble run works on: the parameters, the *anchor batches* (the
dataset's batches when the ensemble was created, which the anchors of every view group are
drawn from) and the batches to cluster. The flows execute plans; the command line builds
them first to report a bad parameter, an unknown dataset or an unknown run before anything
is written or Prefect is started.

* ``cluster``: a new ensemble on every batch of a dataset;
* ``extend``: a run's ensemble with more view groups, on that run's batches;
* ``recluster``: the latest run's ensemble on every batch of the dataset now (new batches
  are placed with the old anchors unless ``refresh_anchors``).
"""

from __future__ import annotations

import datetime as _dt
import secrets
from collections.abc import Sequence
from typing import Any

from storage import ArtifactNotFoundError, validate_name
from storage.datasets import DatasetStore
from tasks.keys import RUN, dataset_ref
from tasks.params import check_int, ensemble_params

__all__ = [
    "list_runs",
    "new_run_id",
    "plan_cluster",
    "plan_extend",
    "plan_recluster",
    "read_run",
]


def read_run(store: Any, run_id: str) -> dict[str, Any]:
    """The record of run ``run_id``.

    Raises
    ------
    ArtifactNotFoundError
        If there is no such run (the message says how to list them).
    """
    validate_name(run_id, "run id")
    try:
        return store.read_record(RUN, run_id)
    except ArtifactNotFoundError:
        raise ArtifactNotFoundError(f"Unknown run {run_id!r} in store {store.url}; "
                                    f"`fastmice runs` lists the runs.") from None


def list_runs(store: Any, dataset: str | None = None) -> list[dict[str, Any]]:
    """Records of every run (of ``dataset`` only, if given), oldest first."""
    runs = [store.read_record(RUN, name) for name in store.list_records(RUN)]
    if dataset is not None:
        runs = [r for r in runs if r["dataset"] == dataset]
    return sorted(runs, key=lambda r: r["created"])


def new_run_id(store: Any, dataset: str, run_name: str | None = None) -> str:
    """``run_name`` if given (it must be new), else ``<dataset>-<yyyymmdd-HHMMSS>-<6 hex>``.

    Raises
    ------
    ValueError
        If ``run_name`` is not a valid name or a run of that name exists.
    """
    if run_name is not None:
        validate_name(run_name, "run name")
        if store.record_version(RUN, run_name):
            raise ValueError(f"A run named {run_name!r} already exists in store {store.url}; "
                             f"choose another run name.")
        return run_name
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{dataset[:100]}-{stamp}-{secrets.token_hex(3)}"


def _plan(kind: str, manifest: dict[str, Any], params: dict[str, Any],
          anchor_batches: Sequence[int], batches: Sequence[int],
          parent_run: str | None) -> dict[str, Any]:
    return {"kind": kind, "parent_run": parent_run, "dataset": manifest["name"],
            "dataset_version": manifest["version"], "params": params,
            "anchor_data": dataset_ref(manifest, anchor_batches),
            "data": dataset_ref(manifest, batches)}


def plan_cluster(store: Any, dataset: str, n_clusters: int, n_groups: int = 20, seed: int = 0,
                 metric: str | Sequence[str] = "euclidean", n_anchors: int = 1000,
                 n_neighbors: int = 5) -> dict[str, Any]:
    """Plan a new ensemble on every batch of ``dataset``.

    Raises
    ------
    ArtifactNotFoundError
        If the dataset does not exist.
    ValueError, TypeError
        For a bad parameter (see :func:`tasks.params.ensemble_params`).
    """
    manifest = DatasetStore(store).manifest(dataset)
    params = ensemble_params(n_samples=manifest["n_samples"], n_views=manifest["n_views"],
                             n_clusters=n_clusters, n_groups=n_groups, seed=seed,
                             metric=metric, n_anchors=n_anchors, n_neighbors=n_neighbors)
    batches = [b["batch_id"] for b in manifest["batches"]]
    return _plan("cluster", manifest, params, batches, batches, None)


def plan_extend(store: Any, run_id: str, n_groups: int) -> dict[str, Any]:
    """Plan run ``run_id``'s ensemble with ``n_groups`` more view groups, on its batches.

    Raises
    ------
    ArtifactNotFoundError
        If the run (or its dataset) does not exist.
    ValueError, TypeError
        If ``n_groups`` is not an int >= 1.
    """
    extra = check_int("n_groups", n_groups, 1)
    run = read_run(store, run_id)
    manifest = DatasetStore(store).manifest(run["dataset"])
    params = {**run["params"], "n_groups": run["params"]["n_groups"] + extra}
    plan = _plan("extend", manifest, params, run["anchor_batches"], run["batches"], run_id)
    if plan["data"]["fingerprint"] != run["dataset_fingerprint"]:
        raise ValueError(f"The batches of run {run_id!r} no longer match dataset "
                         f"{run['dataset']!r}; the store was modified outside fastmice.")
    return plan


def plan_recluster(store: Any, dataset: str, refresh_anchors: bool = False) -> dict[str, Any]:
    """Plan the latest run's ensemble on every batch of ``dataset`` as it is now.

    Raises
    ------
    ArtifactNotFoundError
        If the dataset does not exist.
    ValueError
        If no run has clustered the dataset yet.
    """
    manifest = DatasetStore(store).manifest(dataset)
    runs = list_runs(store, dataset)
    if not runs:
        raise ValueError(f"Dataset {dataset!r} has no run yet in store {store.url}; create "
                         f"its ensemble with `fastmice cluster` first.")
    latest = runs[-1]
    batches = [b["batch_id"] for b in manifest["batches"]]
    anchors = batches if refresh_anchors else latest["anchor_batches"]
    return _plan("recluster", manifest, dict(latest["params"]), anchors, batches,
                 latest["run_id"])
