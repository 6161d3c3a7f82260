"""Task drawing the view groups of an ensemble (:func:`fastmice.draw_view_groups`)."""

from __future__ import annotations

from typing import Any

from prefect import task

import fastmice
from storage import open_store
from tasks._prefect import TASK_OPTIONS
from tasks.keys import VIEW_GROUPS, specs_key

__all__ = ["draw_groups"]


@task(name="draw-groups", **TASK_OPTIONS)
def draw_groups(store_url: str, anchor_data: dict[str, Any], params: dict[str, Any],
                start: int, n_groups: int) -> list[dict[str, Any]]:
    """Specs of groups ``start ..`` ``start + n_groups - 1`` (fastmice.draw_view_groups).

    Writes ``view-groups`` (JSON: ``{"specs": [...]}``).

    Parameters
    ----------
    store_url : str
    anchor_data : dict
        :func:`tasks.keys.dataset_ref` of the batches the ensemble was created on (its
        shape, not its values, enters the specs).
    params : dict
        :func:`tasks.params.ensemble_params`.
    start, n_groups : int

    Returns
    -------
    specs : list of dict
        ``ViewGroupSpec.to_dict()`` of each group, in group order.
    """
    specs = fastmice.draw_view_groups(
        anchor_data["n_features"], anchor_data["n_samples"], params["n_clusters"],
        seed=params["seed"], n_groups=n_groups, start=start, n_anchors=params["n_anchors"],
        n_neighbors=params["n_neighbors"], feature_ratio=tuple(params["feature_ratio"]),
        base_clusters=tuple(params["base_clusters"]), metric=params["metric"])
    dicts = [spec.to_dict() for spec in specs]
    open_store(store_url).put(VIEW_GROUPS, specs_key(anchor_data, params, start, n_groups),
                              {"specs": dicts})
    return dicts
