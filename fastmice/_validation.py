"""Input and parameter checks with messages that name the view, the parameter and the value."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["check_int", "check_metric", "check_params", "check_views", "resolve_seed"]

METRICS = ("euclidean", "cosine")


def resolve_seed(random_state) -> int:
    """The root seed of an ensemble, drawn once from ``random_state``.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator

    Returns
    -------
    seed : int
        In ``[0, 2**31 - 1)``; the same ``random_state`` int always gives the same seed.
    """
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    if random_state is None or isinstance(random_state, numbers.Integral | np.random.RandomState):
        from sklearn.utils import check_random_state

        if isinstance(random_state, numbers.Integral) and not 0 <= random_state < 2**32:
            raise ValueError(f"random_state={random_state} must be in [0, 2**32).")
        return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    raise TypeError(f"random_state must be None, an int, a RandomState or a Generator; got "
                    f"{type(random_state).__name__}.")


def _check_view(X, index: int):
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"View {index} must be 2-D; got a sparse array of shape {X.shape}.")
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or np.iscomplexobj(X):
            raise TypeError(f"View {index} has dtype {X.dtype}; expected a real numeric dtype.")
        X = sp.csr_matrix(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        values = X.data
    else:
        if not hasattr(X, "__array__") and not isinstance(X, list | tuple):
            raise TypeError(f"View {index} is a {type(X).__name__}; expected an array-like or "
                            "a scipy.sparse matrix.")
        try:
            X = np.asarray(X)
        except (ValueError, TypeError) as exc:
            raise TypeError(f"View {index} cannot be read as a numeric array: {exc}") from None
        if X.dtype.kind not in "biuf":
            raise TypeError(f"View {index} has dtype {X.dtype}; expected a real numeric dtype "
                            "(float32 or float64 preferably).")
        if X.ndim != 2:
            hint = " Use X.reshape(-1, 1) for a single feature." if X.ndim == 1 else ""
            raise ValueError(f"View {index} must be 2-D (n_samples, n_features); got shape "
                             f"{X.shape}.{hint}")
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        values = X
    if X.shape[1] == 0:
        raise ValueError(f"View {index} has no features (shape {X.shape}).")
    if X.shape[0] == 0:
        raise ValueError(f"View {index} has no samples (shape {X.shape}).")
    if not np.isfinite(values).all():
        if sp.issparse(X):
            bad_rows = np.unique(np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[
                ~np.isfinite(X.data)])
        else:
            bad_rows = np.flatnonzero(~np.isfinite(X).all(axis=1))
        raise ValueError(f"View {index} has {bad_rows.size} row(s) with NaN or infinite values "
                         f"(first at row {bad_rows[0]}).")
    return X


def check_views(Xs, *, n_views: int | None = None,
                n_features: Sequence[int] | None = None) -> list:
    """Validate a list of views.

    Parameters
    ----------
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
        A single 2-D array or sparse matrix is taken as one view.
    n_views, n_features : optional
        The expected number of views and features per view (when placing new samples).

    Returns
    -------
    Xs : list of ndarray or csr_matrix
        float32 views stay float32, other numeric views become float64; sparse views CSR.
    """
    if sp.issparse(Xs) or (isinstance(Xs, np.ndarray) and Xs.ndim == 2):
        Xs = [Xs]
    if isinstance(Xs, np.ndarray | str | bytes) or not isinstance(Xs, Sequence):
        raise TypeError(f"Xs must be a list of views (arrays or sparse matrices); got "
                        f"{type(Xs).__name__}.")
    if len(Xs) == 0:
        raise ValueError("Xs is an empty list; expected at least one view.")
    views = [_check_view(X, i) for i, X in enumerate(Xs)]
    n_samples = views[0].shape[0]
    for i, X in enumerate(views[1:], start=1):
        if X.shape[0] != n_samples:
            raise ValueError(f"View {i} has {X.shape[0]} samples; expected {n_samples} (the "
                             "number of samples in view 0).")
    if n_views is not None and len(views) != n_views:
        raise ValueError(f"Xs has {len(views)} views; the model was fitted on {n_views}.")
    if n_features is not None:
        for i, (X, d) in enumerate(zip(views, n_features, strict=True)):
            if X.shape[1] != d:
                raise ValueError(f"View {i} has {X.shape[1]} features; the model was fitted "
                                 f"with {d}.")
    return views


def check_metric(metric, n_views: int) -> list[str]:
    """One metric per view, from a string or a list."""
    metrics = [metric] * n_views if isinstance(metric, str) else metric
    if not isinstance(metrics, Sequence) or isinstance(metrics, bytes):
        raise TypeError(f"metric must be a string or a list of strings; got "
                        f"{type(metric).__name__}.")
    if len(metrics) != n_views:
        raise ValueError(f"metric has {len(metrics)} entries; expected one per view "
                         f"({n_views}).")
    for i, m in enumerate(metrics):
        if m not in METRICS:
            where = "" if isinstance(metric, str) else f" for view {i}"
            raise ValueError(f"Unknown metric {m!r}{where}; expected one of {METRICS}.")
    return list(metrics)


def check_int(name: str, value, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``; a bool or a float is a ``TypeError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int; got {value!r} ({type(value).__name__}).")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name}={value} must be {bound}.")
    return int(value)


def _check_pair(name: str, value, low: float, high: float | None) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair of numbers (low, high); got {value!r}.") from None
    if not (low <= a <= b) or (high is not None and b > high):
        upper = "" if high is None else f" <= {high}"
        raise ValueError(f"{name}={value!r} must satisfy {low} <= low <= high{upper}.")
    return a, b


def check_params(*, n_samples: int, n_views: int, n_clusters, n_groups=20, n_anchors=1000,
                 n_neighbors=5, feature_ratio=(0.2, 0.8), base_clusters=(1, 2),
                 metric="euclidean") -> dict:
    """Check the parameters of an ensemble on data of ``n_samples`` rows and ``n_views`` views.

    The same checks :meth:`FastMICE.fit` makes, for callers (a pipeline, a command line) that
    want them before touching the data.

    Returns
    -------
    params : dict
        ``n_clusters``, ``n_groups``, ``n_anchors``, ``n_neighbors`` (int),
        ``feature_ratio``, ``base_clusters`` (lists of two floats), ``metric`` (one per view).

    Raises
    ------
    TypeError, ValueError
        Naming the parameter and the value.
    """
    k = check_int("n_clusters", n_clusters, 2)
    if k > n_samples:
        raise ValueError(f"n_clusters={k} must be <= n_samples={n_samples}.")
    params = {"n_clusters": k,
              "n_groups": check_int("n_groups", n_groups, 1),
              "n_anchors": check_int("n_anchors", n_anchors, 1),
              "n_neighbors": check_int("n_neighbors", n_neighbors, 1),
              "feature_ratio": list(_check_pair("feature_ratio", feature_ratio, 0.0, 1.0)),
              "base_clusters": list(_check_pair("base_clusters", base_clusters, 0.0, None))}
    if params["base_clusters"][0] * k < 1:
        raise ValueError(f"base_clusters={base_clusters!r} gives base clusterings with fewer "
                         f"than 1 cluster for n_clusters={k}.")
    params["metric"] = check_metric(metric, n_views)
    return params
