"""Task drawing the view groups of an ensemble (:func:`fastmice.draw_view_groups`)."""

from __future__ import annotations

from typing import Any

from prefect import task

import fastmice
from pipeline.keys import VIEW_GROUPS, specs_key
from pipeline.params import drawn_params
from storage import open_store
from tasks._options import TASK_OPTIONS

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
        :func:`pipeline.keys.dataset_ref` of the batches the ensemble was created on (its
        shape, not its values, enters the specs).
    params : dict
        ``EnsembleParams.to_dict()`` of the run.
    start, n_groups : int

    Returns
    -------
    specs : list of dict
        ``ViewGroupSpec.to_dict()`` of each group, in group order.
    """
    keyed = fastmice.EnsembleParams.from_dict(params)
    ensemble = drawn_params(open_store(store_url), keyed, anchor_data)
    specs = fastmice.draw_view_groups(anchor_data["n_features"], anchor_data["n_samples"],
                                      ensemble, seed=ensemble.root_seed, start=start,
                                      n_groups=n_groups)
    dicts = [spec.to_dict() for spec in specs]
    open_store(store_url).put(VIEW_GROUPS, specs_key(anchor_data, keyed, start, n_groups),
                              {"specs": dicts})
    return dicts
