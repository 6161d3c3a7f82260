"""Tasks for the base clustering of each view group and the consensus over them.

:func:`base_cluster` calls :func:`fastmice.cluster_group` on a group's graph (its per-batch
rows stacked in batch order); :func:`consensus` calls :func:`fastmice.consensus_with_joint`
on the base labels stacked in group order (and, in the best mode, the views).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from prefect import task

import fastmice
from pipeline.keys import (
    BASE_LABELS,
    BASE_PARTITION,
    CONSENSUS,
    base_key,
    consensus_key,
    group_row_keys,
)
from pipeline.params import drawn_params
from pipeline.reuse import stored_or_computed
from storage import DatasetStore, open_store
from tasks._options import TASK_OPTIONS

__all__ = ["base_cluster", "consensus"]


def _row_refs(data: Mapping[str, Any], graph: Mapping[str, Any],
              rows: list[Mapping[str, Any]]) -> list[dict]:
    """The group's row refs for every batch of ``data``, in batch order."""
    by_batch = dict(graph["rows"])
    by_batch.update({str(r["batch_id"]): r["rows"] for r in rows})
    missing = [b["batch_id"] for b in data["batches"] if str(b["batch_id"]) not in by_batch]
    if missing:
        raise ValueError(f"Group {graph['group']} has no graph rows for batches {missing}.")
    return [by_batch[str(b["batch_id"])] for b in data["batches"]]


@task(name="base-cluster", task_run_name="base-{spec[group_index]}", **TASK_OPTIONS)
def base_cluster(store_url: str, anchor_data: dict[str, Any], data: dict[str, Any],
                 params: dict[str, Any], spec: dict[str, Any], graph: dict[str, Any],
                 rows: list[dict[str, Any]], init: dict[str, Any] | None = None) -> dict:
    """One group's base clustering of every sample of ``data`` (fastmice.cluster_group).

    Reads the group's ``anchor-graph`` rows; writes ``base-partition``
    (``BipartitePartition.to_arrays``), then ``base-labels`` (int64 ``.npy``), which marks
    a finished group.

    Parameters
    ----------
    store_url : str
    anchor_data, data : dict
        :func:`pipeline.keys.dataset_ref` of the anchor batches and of the batches to cluster.
    params : dict
        ``EnsembleParams.to_dict()`` of the run.
    spec : dict
    graph : dict
        :func:`tasks.graphs.build_graph`'s result for the group.
    rows : list of dict
        :func:`tasks.graphs.transform_graph`'s results for the group's later batches.
    init : dict, optional
        Ref of the ``base-partition`` of the first samples to extend to the others (a warm
        start), instead of a new Tcut.

    Returns
    -------
    ref : dict
        ``group``, ``labels`` and ``partition`` (refs), ``n_base_clusters``, ``computed``,
        ``warm`` (whether it extends ``init``) and ``seconds`` (per stage,
        :func:`fastmice.record_stages`).
    """
    store = open_store(store_url)
    ensemble = fastmice.EnsembleParams.from_dict(params)
    key = base_key(group_row_keys(anchor_data, data, ensemble, spec), spec, init)

    def compute() -> list[Any]:
        with fastmice.stage("read"):
            pieces = [store.get(ref) for ref in _row_refs(data, graph, rows)]
            B = pieces[0] if len(pieces) == 1 else sp.vstack(pieces, format="csr")
            start = None if init is None else \
                fastmice.BipartitePartition.from_arrays(store.get(init))
        partition = fastmice.cluster_group(B, fastmice.ViewGroupSpec.from_dict(spec), start,
                                           mode=ensemble.mode)
        return [partition.to_arrays(), np.asarray(partition.labels_)]

    (partition, labels), computed, seconds = stored_or_computed(
        store, [(BASE_PARTITION, key), (BASE_LABELS, key)], compute)
    return {"group": spec["group_index"], "labels": labels, "partition": partition,
            "n_base_clusters": spec["n_base_clusters"], "computed": computed,
            "warm": init is not None, "seconds": seconds}


@task(name="consensus", **TASK_OPTIONS)
def consensus(store_url: str, bases: list[dict[str, Any]], params: dict[str, Any],
              init: dict[str, Any] | None = None, data: dict[str, Any] | None = None,
              anchor_data: dict[str, Any] | None = None) -> dict:
    """The consensus partition of the base clusterings (fastmice.consensus_with_joint).

    Reads ``base-labels`` (and, in the best mode, the views of ``data``, by rows, for the
    joint-space part); writes ``consensus`` (``ConsensusPartition.to_arrays``, whose
    ``labels`` are the final labels), seeded with the ensemble's root seed.

    Parameters
    ----------
    store_url : str
    bases : list of dict
        :func:`base_cluster`'s results, in group order.
    params : dict
        ``EnsembleParams.to_dict()`` of the run.
    init : dict, optional
        Ref of the ``consensus`` to refine (a warm start), instead of a new Tcut.
    data, anchor_data : dict, optional
        :func:`pipeline.keys.dataset_ref` of the batches clustered and of the anchor
        batches (where ``metric="auto"`` was resolved); needed in the best mode.

    Returns
    -------
    ref : dict
        ``consensus`` (ref), ``computed`` and ``seconds`` (per stage).
    """
    store = open_store(store_url)
    ensemble = fastmice.EnsembleParams.from_dict(params)
    key = consensus_key([b["labels"]["key"] for b in bases], ensemble, init)

    def compute() -> list[Any]:
        with fastmice.stage("read"):
            base_labels = np.column_stack([store.get(b["labels"]) for b in bases])
            start = None if init is None else \
                fastmice.ConsensusPartition.from_arrays(store.get(init))
            Xs, drawn = [], ensemble
            if ensemble.mode == "best":
                if data is None or anchor_data is None:
                    raise ValueError("The best mode's consensus needs the views: give data "
                                     "and anchor_data.")
                Xs = DatasetStore(store).read_views(
                    data["name"], batches=[b["batch_id"] for b in data["batches"]], rows=True)
                drawn = drawn_params(store, ensemble, anchor_data)
        return [fastmice.consensus_with_joint(Xs, base_labels, drawn, n_jobs=ensemble.n_jobs,
                                              init=start).to_arrays()]

    refs, computed, seconds = stored_or_computed(store, [(CONSENSUS, key)], compute)
    return {"consensus": refs[0], "computed": computed, "seconds": seconds}
