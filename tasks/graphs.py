"""Tasks building a view group's bipartite graph, batch by batch.

:func:`build_graph` calls :func:`fastmice.build_group_graph` on the batches the ensemble was
created on and stores the group's anchors plus the graph's rows *per batch*;
:func:`transform_graph` places a later batch with those anchors
(:func:`fastmice.transform_group_graph`). A batch's rows are therefore computed once, and a
new batch costs only its own rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
from prefect import task

import fastmice
from pipeline.empty_rows import group_empty_rows
from pipeline.keys import ANCHORS, GRAPH_ROWS, anchors_key, rows_key
from pipeline.reuse import stored_or_computed
from storage import DatasetStore, open_store
from tasks._options import TASK_OPTIONS

__all__ = ["build_graph", "transform_graph"]


def _batch_ids(data: Mapping[str, Any]) -> list[int]:
    return [b["batch_id"] for b in data["batches"]]


@task(name="build-graph", task_run_name="graph-{spec[group_index]}", **TASK_OPTIONS)
def build_graph(store_url: str, anchor_data: dict[str, Any], params: dict[str, Any],
                spec: dict[str, Any]) -> dict:
    """One group's graph on the anchor batches (fastmice.build_group_graph).

    Writes one ``anchor-graph`` CSR per anchor batch (that batch's rows of the graph), then
    ``group-anchors`` (``GroupAnchors.to_arrays``).

    Parameters
    ----------
    store_url : str
    anchor_data : dict
        :func:`pipeline.keys.dataset_ref` of the batches the ensemble was created on.
    params : dict
        ``EnsembleParams.to_dict()`` of the run.
    spec : dict
        ``ViewGroupSpec.to_dict()``.

    Returns
    -------
    ref : dict
        ``group``, ``anchors`` (ref), ``rows`` (``{batch_id: ref}``, batch ids as str),
        ``computed`` (False when everything was already stored) and ``seconds`` (per stage,
        :func:`fastmice.record_stages`).
    """
    store = open_store(store_url)
    key = anchors_key(anchor_data, fastmice.EnsembleParams.from_dict(params), spec)
    mode = fastmice.EnsembleParams.from_dict(params).mode
    outputs = [*((GRAPH_ROWS, rows_key(key, b["fingerprint"])) for b in anchor_data["batches"]),
               (ANCHORS, key)]

    def compute() -> list[Any]:
        # Opened and checksummed, and the all-zero rows of the group's views found (once per
        # process: pipeline.empty_rows); rows are read by the search.
        with fastmice.stage("read"):
            Xs = DatasetStore(store).read_views(anchor_data["name"],
                                                 batches=_batch_ids(anchor_data), rows=True)
            group = fastmice.ViewGroupSpec.from_dict(spec)
            empty = group_empty_rows([b["fingerprint"] for b in anchor_data["batches"]], Xs,
                                     group.views, mode)
        B, anchors = fastmice.build_group_graph(Xs, group, empty)
        bounds = np.cumsum([0] + [b["n_samples"] for b in anchor_data["batches"]])
        return [*(B[a:b] for a, b in itertools.pairwise(bounds)), anchors.to_arrays()]

    refs, computed, seconds = stored_or_computed(store, outputs, compute)
    return {"group": spec["group_index"], "anchors": refs[-1],
            "rows": {str(b): ref for b, ref in zip(_batch_ids(anchor_data), refs[:-1],
                                                    strict=True)},
            "computed": computed, "seconds": seconds}


@task(name="transform-graph", task_run_name="rows-{spec[group_index]}-batch-{batch[batch_id]}",
      **TASK_OPTIONS)
def transform_graph(store_url: str, anchor_data: dict[str, Any], params: dict[str, Any],
                    spec: dict[str, Any], batch: dict[str, Any], graph: dict[str, Any]) -> dict:
    """One later batch's rows of a group's graph (fastmice.transform_group_graph).

    Reads ``group-anchors`` and the batch's views; writes one ``anchor-graph`` CSR.

    Parameters
    ----------
    store_url : str
    anchor_data, params, spec : dict
        As for :func:`build_graph`.
    batch : dict
        ``{"batch_id", "fingerprint", "n_samples"}`` of the batch to place.
    graph : dict
        :func:`build_graph`'s result for the group (the anchors to place it with).

    Returns
    -------
    ref : dict
        ``group``, ``batch_id``, ``rows`` (ref), ``computed`` and ``seconds`` (per stage).
    """
    store = open_store(store_url)
    key = anchors_key(anchor_data, fastmice.EnsembleParams.from_dict(params), spec)
    mode = fastmice.EnsembleParams.from_dict(params).mode

    def compute() -> list[Any]:
        with fastmice.stage("read"):
            Xs = DatasetStore(store).read_views(anchor_data["name"],
                                                 batches=[batch["batch_id"]], rows=True)
            anchors = fastmice.GroupAnchors.from_arrays(store.get(graph["anchors"]))
            group = fastmice.ViewGroupSpec.from_dict(spec)
            empty = group_empty_rows([batch["fingerprint"]], Xs, group.views, mode)
        return [fastmice.transform_group_graph(Xs, group, anchors, empty)]

    refs, computed, seconds = stored_or_computed(
        store, [(GRAPH_ROWS, rows_key(key, batch["fingerprint"]))], compute)
    return {"group": spec["group_index"], "batch_id": batch["batch_id"], "rows": refs[0],
            "computed": computed, "seconds": seconds}
