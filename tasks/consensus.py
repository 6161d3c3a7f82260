"""Tasks for the base clustering of each view group and the consensus over them.

:func:`base_cluster` calls :func:`fastmice.cluster_group` on a group's graph (its per-batch
rows stacked in batch order); :func:`consensus` calls :func:`fastmice.consensus_partition`
on the base labels stacked in group order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from prefect import task

import fastmice
from storage import open_store
from tasks._prefect import TASK_OPTIONS, StoreCacheKey, register_cache_key
from tasks.keys import (
    BASE_LABELS,
    BASE_PARTITION,
    CONSENSUS,
    base_key,
    consensus_key,
    group_row_keys,
    stored_refs,
)

__all__ = ["base_cluster", "consensus"]


def base_outputs(parameters: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """Key and artifacts of :func:`base_cluster`: its labels and its partition."""
    spec = parameters["spec"]
    key = base_key(group_row_keys(parameters["anchor_data"], parameters["data"], spec), spec)
    return key, [(BASE_LABELS, key), (BASE_PARTITION, key)]


def consensus_outputs(parameters: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """Key and artifact of :func:`consensus`."""
    key = consensus_key([b["labels"]["key"] for b in parameters["bases"]],
                        parameters["n_clusters"], parameters["seed"])
    return key, [(CONSENSUS, key)]


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
                 spec: dict[str, Any], graph: dict[str, Any],
                 rows: list[dict[str, Any]]) -> dict:
    """One group's base clustering of every sample of ``data`` (fastmice.cluster_group).

    Reads the group's ``anchor-graph`` rows; writes ``base-labels`` (int64 ``.npy``) and
    ``base-partition`` (``BipartitePartition.to_arrays``).

    Parameters
    ----------
    store_url : str
    anchor_data, data : dict
        :func:`tasks.keys.dataset_ref` of the anchor batches and of the batches to cluster.
    spec : dict
    graph : dict
        :func:`tasks.graphs.build_graph`'s result for the group.
    rows : list of dict
        :func:`tasks.graphs.transform_graph`'s results for the group's later batches.

    Returns
    -------
    ref : dict
        ``group``, ``labels`` and ``partition`` (refs), ``n_base_clusters``, ``computed``.
    """
    store = open_store(store_url)
    key, outputs = base_outputs({"anchor_data": anchor_data, "data": data, "spec": spec})
    refs = stored_refs(store, outputs)
    computed = refs is None
    if computed:
        pieces = [store.get(ref) for ref in _row_refs(data, graph, rows)]
        B = pieces[0] if len(pieces) == 1 else sp.vstack(pieces, format="csr")
        partition = fastmice.cluster_group(B, fastmice.ViewGroupSpec.from_dict(spec))
        # The labels go last: a stored base-labels artifact marks a finished group.
        partition_ref = store.put(BASE_PARTITION, key, partition.to_arrays()).to_dict()
        refs = [store.put(BASE_LABELS, key, np.asarray(partition.labels_)).to_dict(),
                partition_ref]
    return {"group": spec["group_index"], "labels": refs[0], "partition": refs[1],
            "n_base_clusters": spec["n_base_clusters"], "computed": computed}


@task(name="consensus", **TASK_OPTIONS)
def consensus(store_url: str, bases: list[dict[str, Any]], n_clusters: int, seed: int) -> dict:
    """The consensus partition of the base clusterings (fastmice.consensus_partition).

    Reads ``base-labels``; writes ``consensus`` (``ConsensusPartition.to_arrays``, whose
    ``labels`` are the final labels).

    Parameters
    ----------
    store_url : str
    bases : list of dict
        :func:`base_cluster`'s results, in group order.
    n_clusters : int
    seed : int
        Root seed of the ensemble (``fastmice.resolve_seed(random_state)``).

    Returns
    -------
    ref : dict
        ``consensus`` (ref) and ``computed``.
    """
    store = open_store(store_url)
    key, outputs = consensus_outputs({"bases": bases, "n_clusters": n_clusters, "seed": seed})
    refs = stored_refs(store, outputs)
    computed = refs is None
    if computed:
        base_labels = np.column_stack([store.get(b["labels"]) for b in bases])
        result = fastmice.consensus_partition(base_labels, n_clusters, seed=seed)
        refs = [store.put(CONSENSUS, key, result.to_arrays()).to_dict()]
    return {"consensus": refs[0], "computed": computed}


register_cache_key(base_cluster.name, StoreCacheKey("base", base_outputs))
register_cache_key(consensus.name, StoreCacheKey("consensus", consensus_outputs))
