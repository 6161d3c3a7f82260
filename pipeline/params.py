"""The one parameter object, as the pipeline builds it from a command line or a deployment.

Names, defaults and checks are :class:`fastmice.EnsembleParams`' (``fastmice/_params.py``);
this module only reads what a caller gives (``None`` means "not given": the default), splits
a comma-separated metric list, gives an unseeded run the pipeline's fixed ``random_state``
and says how ``n_jobs`` sizes a task runner.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from fastmice import EnsembleParams, resolve_metrics
from fastmice._best import CHOICES
from fastmice._params import DEFAULTS, PIPELINE_RANDOM_STATE, check_int, check_n_jobs
from storage import DatasetStore

__all__ = ["BEST_BASE_K_CAP", "DEFAULTS", "DEFAULT_WORKERS", "PARAM_NAMES", "PIPELINE_MODE",
           "PIPELINE_RANDOM_STATE", "check_int", "check_n_jobs", "drawn_params", "ensemble_params",
           "params_of", "resolved_metrics", "task_workers"]

#: The parameter names, in the estimator's order.
PARAM_NAMES = tuple(f.name for f in fields(EnsembleParams))

#: The mode of a pipeline run that is given none: the command line and the deployments
#: serve users who want the best clusters; the library keeps the published algorithm as its
#: default (``fastmice.EnsembleParams.mode``).
PIPELINE_MODE = "best"

#: The best mode's base clusterings draw k up to ``min(sqrt(N), BEST_BASE_K_CAP)`` where that
#: is more than ``2 k`` (fastmice._best.base_k_range).
BEST_BASE_K_CAP = CHOICES.base_k_cap

#: Task-runner workers when ``n_jobs`` is None: the estimator then fits one view group at a
#: time (scikit-learn's convention); the pipeline keeps its thread pool of two.
DEFAULT_WORKERS = 2


def ensemble_params(n_samples: int, n_views: int, **given: Any) -> EnsembleParams:
    """Build and check the parameters of a pipeline run on data of this shape.

    Parameters
    ----------
    n_samples, n_views : int
        Of the data the ensemble is created on.
    **given
        Any of :data:`PARAM_NAMES`; a value ``None`` is not given (the default applies).
        ``n_clusters`` may be ``"auto"`` (or digits, read as an int); ``metric`` may be a
        comma-separated list (``"euclidean,cosine"``); ``random_state``
        must be an int (default :data:`fastmice._params.PIPELINE_RANDOM_STATE`): a run is
        written down and must be reproducible; ``mode`` defaults to :data:`PIPELINE_MODE`,
        ``n_jobs`` to :data:`DEFAULT_WORKERS`.

    Returns
    -------
    params : EnsembleParams
        Checked against the data (one metric per view).

    Raises
    ------
    ValueError, TypeError
        Naming the parameter and the value.
    """
    unknown = sorted(set(given) - set(PARAM_NAMES))
    if unknown:
        raise TypeError(f"Unknown parameters {unknown}; expected some of {list(PARAM_NAMES)}.")
    values = {k: v for k, v in given.items() if v is not None}
    metric = values.get("metric")
    if isinstance(metric, str) and "," in metric:
        values["metric"] = [m.strip() for m in metric.split(",")]
    k = values.get("n_clusters")
    if isinstance(k, str) and k.strip().isdigit():  # "8" from a deployment's form: an int
        values["n_clusters"] = int(k)
    values.setdefault("random_state", PIPELINE_RANDOM_STATE)
    values.setdefault("mode", PIPELINE_MODE)
    # Written down as the workers it runs on, so that a record (`fastmice show`) says 2, not
    # null; it changes no result (pipeline.keys.EXECUTION_ONLY).
    values.setdefault("n_jobs", DEFAULT_WORKERS)
    params = EnsembleParams(**values).for_data(n_samples, n_views)
    params.to_dict()  # a run is written down: a generator as random_state is refused here
    return params


def resolved_metrics(params: EnsembleParams, Xs: list) -> list[str]:
    """The run's metric per view, ``"auto"`` resolved on the data (what its record shows)."""
    return list(resolve_metrics(Xs, params.metric, params.mode))


def drawn_params(store: Any, params: EnsembleParams,
                 anchor_data: Mapping[str, Any]) -> EnsembleParams:
    """``params`` as a run's view groups were drawn with them: ``metric="auto"`` resolved on
    the run's anchor batches (``anchor_data``: :func:`pipeline.keys.dataset_ref`), read by
    rows. A run started by the command line has it resolved already (its record shows the
    choice); a deployment's run may not."""
    if "auto" not in params.metric:
        return params
    Xs = DatasetStore(store).read_views(
        anchor_data["name"], batches=[b["batch_id"] for b in anchor_data["batches"]],
        rows=True)
    return replace(params, metric=resolve_metrics(Xs, params.metric, params.mode))


def params_of(record: Mapping[str, Any]) -> EnsembleParams:
    """The parameters written in a run record (``record["params"]``).

    Records written before the parameters were one object also hold the root seed under
    ``"seed"`` and no ``n_jobs``; the seed is derived again from ``random_state``.
    """
    values = {k: v for k, v in record["params"].items() if k in PARAM_NAMES}
    return EnsembleParams.from_dict(values)


def task_workers(n_jobs: int | None, n_cpus: int | None = None) -> int:
    """Task-runner workers for ``n_jobs``: ``None`` -> :data:`DEFAULT_WORKERS`; ``-1`` all
    cores, ``-2`` all but one... (joblib's rule); a positive int as it is."""
    if n_jobs is None:
        return DEFAULT_WORKERS
    if n_jobs > 0:
        return n_jobs
    return max(1, (n_cpus or os.cpu_count() or 1) + 1 + n_jobs)
