"""Label new samples with a stored run, as :meth:`fastmice.FastMICE.predict` does.

A run's record names, per view group, the stored anchors and base partition, and the stored
consensus; the groups' specs are drawn again from the record's parameters and root seed (a
spec depends only on them, the group's index and the shape of the anchor batches) and each
is checked against its stored anchors' content key. New samples then go through each
group's anchors (:func:`fastmice.transform_group_graph`), its base partition's embedding
and the consensus: nothing is partitioned again and nothing is written to the store.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

import fastmice
from pipeline.keys import anchors_key, dataset_ref
from pipeline.params import drawn_params, params_of, task_workers
from pipeline.runs import read_run
from storage import DatasetStore

__all__ = ["StoredModel", "check_new_views", "label_samples", "load_model", "predict_labels"]


@dataclass(frozen=True)
class StoredModel:
    """What a stored run needs to label new samples.

    Attributes
    ----------
    run_id : str
    n_clusters : int
        The number of clusters of the run's labels.
    params : EnsembleParams
        With one metric per view.
    n_features : list of int
        Features per view of the run's dataset.
    view_types : list of str
        ``"dense"`` or ``"sparse"`` per view.
    specs : list of ViewGroupSpec
    anchors : list of GroupAnchors
    partitions : list of BipartitePartition
    consensus : ConsensusPartition
    """

    run_id: str
    n_clusters: int
    params: fastmice.EnsembleParams
    n_features: list[int]
    view_types: list[str]
    specs: list[fastmice.ViewGroupSpec]
    anchors: list[fastmice.GroupAnchors]
    partitions: list[fastmice.BipartitePartition]
    consensus: fastmice.ConsensusPartition


def load_model(store: Any, run_id: str) -> StoredModel:
    """Rebuild run ``run_id``'s fitted ensemble from its stored artifacts (read only).

    Raises
    ------
    ArtifactNotFoundError
        If the run or one of its artifacts is not in the store.
    ValueError
        If the run's groups cannot be drawn again as they were (a record from other code).
    """
    record = read_run(store, run_id)
    manifest = DatasetStore(store).manifest(record["dataset"])
    anchor_data = dataset_ref(manifest, record["anchor_batches"])
    keyed = params_of(record).for_data(anchor_data["n_samples"], anchor_data["n_views"])
    params = drawn_params(store, keyed, anchor_data)
    specs = fastmice.draw_view_groups(anchor_data["n_features"], anchor_data["n_samples"],
                                      params, seed=params.root_seed, start=0,
                                      n_groups=params.n_groups)
    groups = sorted(record["groups"], key=lambda g: g["group"])
    for spec, group in zip(specs, groups, strict=True):
        if anchors_key(anchor_data, keyed, spec.to_dict()) != group["anchors"]["key"]:
            raise ValueError(f"Run {run_id}: view group {spec.group_index} cannot be drawn "
                             f"again as it was (made by other code: CODE_VERSION "
                             f"{record.get('code_version')}); rerun it to label new samples.")
    return StoredModel(
        run_id=run_id, n_clusters=int(record["n_clusters"]), params=params,
        n_features=list(manifest["n_features"]),
        view_types=list(manifest["view_types"]), specs=specs,
        anchors=[fastmice.GroupAnchors.from_arrays(store.get(g["anchors"])) for g in groups],
        partitions=[fastmice.BipartitePartition.from_arrays(store.get(g["partition"]))
                    for g in groups],
        consensus=fastmice.ConsensusPartition.from_arrays(store.get(record["consensus"])))


def check_new_views(model: StoredModel, Xs: list[Any], metric: str | None = None) -> None:
    """Refuse, in one line, new data that do not match the run's views.

    Parameters
    ----------
    model : StoredModel
    Xs : list of views
    metric : str, optional
        The metric(s) the caller means (one, or comma-separated per view): must be the run's.

    Raises
    ------
    ValueError
        Naming the run and what differs: the number of views, a view's width, its
        dense/sparse type (text views stay sparse), or the metric.
    """
    run = f"run {model.run_id}"
    if len(Xs) != len(model.n_features):
        raise ValueError(f"The new data have {len(Xs)} view(s); {run} has "
                         f"{len(model.n_features)} ({model.n_features} features).")
    for v, (X, width) in enumerate(zip(Xs, model.n_features, strict=True)):
        if X.shape[1] != width:
            raise ValueError(f"View {v} of the new data has {X.shape[1]} features; view {v} "
                             f"of {run} has {width}.")
        if (model.view_types[v] == "sparse") != sp.issparse(X):
            raise ValueError(f"View {v} of the new data is "
                             f"{'sparse' if sp.issparse(X) else 'dense'}; view {v} of {run} is "
                             f"{model.view_types[v]}.")
    if metric is not None:
        given = [m.strip() for m in metric.split(",")]
        given = given * len(Xs) if len(given) == 1 else given
        if given != list(model.params.metric):
            raise ValueError(f"--metric {metric}: {run} compares its views with "
                             f"{','.join(model.params.metric)}.")


def label_samples(store: Any, run_id: str, Xs: list[Any], *, metric: str | None = None,
                  n_jobs: int | None = None) -> np.ndarray:
    """Labels of new samples by run ``run_id``'s ensemble, without changing the run.

    Parameters
    ----------
    store : store
    run_id : str
    Xs : list of views, each of shape (n_new, n_features_v)
        Validated views (:func:`pipeline.ingest.read_samples`).
    metric : str, optional
        Checked against the run's (see :func:`check_new_views`).
    n_jobs : int, optional
        Threads over the view groups (the labels do not depend on it).

    Returns
    -------
    labels : ndarray of shape (n_new,)
    """
    model = load_model(store, run_id)
    check_new_views(model, Xs, metric)
    return predict_labels(model, Xs, n_jobs)


def predict_labels(model: StoredModel, Xs: list[Any], n_jobs: int | None) -> np.ndarray:
    """Labels of ``Xs`` (checked by :func:`check_new_views`) by a stored model: each
    group's base labels (groups in ``n_jobs`` threads), then the consensus over them."""
    mode = model.params.mode
    empty = fastmice.missing_rows(Xs, mode)

    def base_labels(g: int) -> np.ndarray:
        return fastmice.predict_group_labels(Xs, model.specs[g], model.anchors[g],
                                             model.partitions[g], empty, mode)

    workers = 1 if n_jobs is None else task_workers(n_jobs)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        base = list(pool.map(base_labels, range(len(model.specs))))
    return model.consensus.predict(np.column_stack(base), Xs, workers)
