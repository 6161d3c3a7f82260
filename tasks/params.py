"""Validation of the ensemble parameters, before anything is written (Prefect-free).

The checks are the library's (:func:`fastmice.check_params`); this adds the seed and the
command line's comma-separated metric list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import fastmice
from fastmice._validation import check_int

__all__ = ["check_int", "ensemble_params"]


def ensemble_params(*, n_samples: int, n_views: int, n_clusters: int, n_groups: int,
                    seed: int, metric: str | Sequence[str] = "euclidean",
                    n_anchors: int = 1000, n_neighbors: int = 5,
                    feature_ratio: Sequence[float] = (0.2, 0.8),
                    base_clusters: Sequence[float] = (1, 2)) -> dict[str, Any]:
    """Check the parameters of an ensemble and return them as a JSON-able dict.

    Parameters
    ----------
    n_samples, n_views : int
        Of the data the ensemble is created on.
    n_clusters : int
        k, in ``[2, n_samples]``.
    n_groups : int
        Number of view groups, >= 1.
    seed : int
        ``random_state`` of :class:`fastmice.FastMICE`, in ``[0, 2**32)``.
    metric : str or sequence of str, default="euclidean"
        One metric, a comma-separated list, or a list with one metric per view.
    n_anchors, n_neighbors : int, default=1000, 5
    feature_ratio, base_clusters : pair of float, default=(0.2, 0.8), (1, 2)

    Returns
    -------
    params : dict
        ``n_clusters``, ``n_groups``, ``random_state`` (the seed given), ``seed`` (the root
        seed, ``fastmice.resolve_seed(random_state)``), ``metric`` (one per view),
        ``n_anchors``, ``n_neighbors``, ``feature_ratio``, ``base_clusters``.

    Raises
    ------
    ValueError, TypeError
        Naming the parameter and the value.
    """
    if isinstance(metric, str) and "," in metric:
        metric = [m.strip() for m in metric.split(",")]
    params = fastmice.check_params(
        n_samples=n_samples, n_views=n_views, n_clusters=n_clusters, n_groups=n_groups,
        n_anchors=n_anchors, n_neighbors=n_neighbors, feature_ratio=feature_ratio,
        base_clusters=base_clusters, metric=metric)
    random_state = check_int("seed", seed, 0, 2**32 - 1)
    return {**params, "random_state": random_state,
            "seed": fastmice.resolve_seed(random_state)}
