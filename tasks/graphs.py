"""Tasks building a view group's bipartite graph, batch by batch.

:func:`build_graph` calls :func:`fastmice.build_group_graph` on the batches the ensemble was
created on and stores the group's anchors plus the graph's rows *per batch*;
:func:`transform_graph` places a later batch with those anchors
(:func:`fastmice.transform_group_graph`). A batch's rows are therefore computed once, and a
new batch costs only its own rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from prefect import task

import fastmice
from storage import open_store
from storage.datasets import DatasetStore
from tasks._prefect import TASK_OPTIONS, StoreCacheKey, register_cache_key
from tasks.keys import ANCHORS, GRAPH_ROWS, anchors_key, rows_key, stored_refs

__all__ = ["build_graph", "transform_graph"]


def _batch_ids(data: Mapping[str, Any]) -> list[int]:
    return [b["batch_id"] for b in data["batches"]]


def graph_outputs(parameters: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """Key and artifacts of :func:`build_graph`: the anchors, then each anchor batch's rows."""
    key = anchors_key(parameters["anchor_data"], parameters["spec"])
    rows = [(GRAPH_ROWS, rows_key(key, b["fingerprint"]))
            for b in parameters["anchor_data"]["batches"]]
    return key, [(ANCHORS, key), *rows]


def rows_outputs(parameters: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """Key and artifact of :func:`transform_graph`: one batch's rows."""
    key = rows_key(anchors_key(parameters["anchor_data"], parameters["spec"]),
                   parameters["batch"]["fingerprint"])
    return key, [(GRAPH_ROWS, key)]


@task(name="build-graph", task_run_name="graph-{spec[group_index]}", **TASK_OPTIONS)
def build_graph(store_url: str, anchor_data: dict[str, Any], spec: dict[str, Any]) -> dict:
    """One group's graph on the anchor batches (fastmice.build_group_graph).

    Writes ``group-anchors`` (``GroupAnchors.to_arrays``) and one ``anchor-graph`` CSR per
    anchor batch (that batch's rows of the graph).

    Parameters
    ----------
    store_url : str
    anchor_data : dict
        :func:`tasks.keys.dataset_ref` of the batches the ensemble was created on.
    spec : dict
        ``ViewGroupSpec.to_dict()``.

    Returns
    -------
    ref : dict
        ``group``, ``anchors`` (ref), ``rows`` (``{batch_id: ref}``, batch ids as str) and
        ``computed`` (False when everything was already stored).
    """
    store = open_store(store_url)
    _, outputs = graph_outputs({"anchor_data": anchor_data, "spec": spec})
    refs = stored_refs(store, outputs)
    computed = refs is None
    if computed:
        Xs = DatasetStore(store).load_views(anchor_data["name"], batches=_batch_ids(anchor_data))
        B, anchors = fastmice.build_group_graph(Xs, fastmice.ViewGroupSpec.from_dict(spec))
        bounds = np.cumsum([0] + [b["n_samples"] for b in anchor_data["batches"]])
        refs = [store.put(kind, key, B[start:stop]).to_dict() for (kind, key), start, stop
                in zip(outputs[1:], bounds[:-1], bounds[1:], strict=True)]
        refs.insert(0, store.put(ANCHORS, outputs[0][1], anchors.to_arrays()).to_dict())
    return {"group": spec["group_index"], "anchors": refs[0],
            "rows": {str(b): ref for b, ref in zip(_batch_ids(anchor_data), refs[1:],
                                                    strict=True)},
            "computed": computed}


@task(name="transform-graph", task_run_name="rows-{spec[group_index]}-batch-{batch[batch_id]}",
      **TASK_OPTIONS)
def transform_graph(store_url: str, anchor_data: dict[str, Any], spec: dict[str, Any],
                    batch: dict[str, Any], graph: dict[str, Any]) -> dict:
    """One later batch's rows of a group's graph (fastmice.transform_group_graph).

    Reads ``group-anchors`` and the batch's views; writes one ``anchor-graph`` CSR.

    Parameters
    ----------
    store_url : str
    anchor_data : dict
        As for :func:`build_graph`.
    spec : dict
    batch : dict
        ``{"batch_id", "fingerprint", "n_samples"}`` of the batch to place.
    graph : dict
        :func:`build_graph`'s result for the group (the anchors to place it with).

    Returns
    -------
    ref : dict
        ``group``, ``batch_id``, ``rows`` (ref) and ``computed``.
    """
    store = open_store(store_url)
    key, outputs = rows_outputs({"anchor_data": anchor_data, "spec": spec, "batch": batch})
    refs = stored_refs(store, outputs)
    computed = refs is None
    if computed:
        Xs = DatasetStore(store).load_views(anchor_data["name"], batches=[batch["batch_id"]])
        anchors = fastmice.GroupAnchors.from_arrays(store.get(graph["anchors"]))
        rows = fastmice.transform_group_graph(Xs, fastmice.ViewGroupSpec.from_dict(spec),
                                              anchors)
        refs = [store.put(GRAPH_ROWS, key, rows).to_dict()]
    return {"group": spec["group_index"], "batch_id": batch["batch_id"], "rows": refs[0],
            "computed": computed}


register_cache_key(build_graph.name, StoreCacheKey("graph", graph_outputs))
register_cache_key(transform_graph.name, StoreCacheKey("rows", rows_outputs))
