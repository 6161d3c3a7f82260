"""The ensemble's parameters, defined once: names, defaults, checks and the seed resolver.

:class:`EnsembleParams` is the one parameter object of fastmice. ``FastMICE.__init__`` takes
its defaults from :data:`DEFAULTS`, ``FastMICE.fit`` builds one from ``get_params()``, and
the pipeline builds one from the command line or a deployment and carries it whole through
its plan, its artifact keys and its run record. A new parameter is added here (and to the
estimator's signature, which scikit-learn reads); everything else picks it up.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from types import SimpleNamespace
from typing import Any

import numpy as np

__all__ = ["AUTO", "DEFAULTS", "METRICS", "MODES",
           "PIPELINE_RANDOM_STATE", "EnsembleParams", "check_int", "check_n_jobs",
           "resolve_seed"]

#: ``n_clusters="auto"``: k is chosen from the data (:mod:`fastmice._auto_k`).
AUTO = "auto"

#: The distances a view can be compared with ("hellinger": euclidean between the element-wise
#: square roots of non-negative rows); "auto" chooses one from the view's values
#: (``fastmice._metric_rule``).
METRICS = ("euclidean", "cosine", "hellinger", "auto")
#: "paper": the published algorithm as the official code computes it; "best": the choices
#: of ``fastmice._best`` on top of it (docs/algorithm.md).
MODES = ("paper", "best")
#: ``random_state`` ints are seeds of ``numpy.random.RandomState``: ``[0, 2**32)``.
_SEED_BOUND = 2**32


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``; a bool or a float is a ``TypeError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int; got {value!r} ({type(value).__name__}).")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name}={value} must be {bound}.")
    return int(value)


def _check_pair(name: str, value: Any, low: float, high: float | None) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair of numbers (low, high); got {value!r}.") from None
    if not (low <= a <= b) or (high is not None and b > high):
        upper = "" if high is None else f" <= {high}"
        raise ValueError(f"{name}={value!r} must satisfy {low} <= low <= high{upper}.")
    return a, b


def check_n_jobs(n_jobs: Any) -> int | None:
    """``n_jobs`` as joblib takes it: None, or a nonzero int (-1: every core)."""
    if n_jobs is None:
        return None
    check_int("n_jobs", n_jobs, -(2**31))
    if n_jobs == 0:
        raise ValueError("n_jobs=0 is not allowed; use None, a positive int or -1.")
    return int(n_jobs)


def _check_metric(metric: Any) -> str | tuple[str, ...] | None:
    """None (the mode's default), one metric name, or one per view (their number is checked
    against the data later)."""
    if metric is None:
        return None
    if isinstance(metric, str):
        if metric not in METRICS:
            raise ValueError(f"Unknown metric {metric!r}; expected one of {METRICS}.")
        return metric
    if not isinstance(metric, Sequence) or isinstance(metric, bytes):
        raise TypeError(f"metric must be a string or a list of strings; got "
                        f"{type(metric).__name__}.")
    for i, m in enumerate(metric):
        if m not in METRICS:
            raise ValueError(f"Unknown metric {m!r} for view {i}; expected one of {METRICS}.")
    return tuple(metric)


def _check_random_state(random_state: Any) -> None:
    if isinstance(random_state, np.random.Generator | np.random.RandomState) or \
            random_state is None:
        return
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(f"random_state must be None, an int, a RandomState or a Generator; got "
                        f"{type(random_state).__name__}.")
    if not 0 <= random_state < _SEED_BOUND:
        raise ValueError(f"random_state={random_state} must be in [0, 2**32).")


def resolve_seed(random_state: Any) -> int:
    """The root seed of an ensemble, drawn once from ``random_state`` (the one resolver).

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        An int must be in ``[0, 2**32)``.

    Returns
    -------
    seed : int
        In ``[0, 2**31 - 1)``; the same ``random_state`` int always gives the same seed.
    """
    _check_random_state(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    from sklearn.utils import check_random_state

    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


@dataclass(frozen=True)
class EnsembleParams:
    """The parameters of a FastMICE ensemble, validated when the object is made.

    The fields are exactly the parameters of :class:`fastmice.FastMICE` (see its docstring
    for their meaning; ``n_clusters`` is an int >= 2 or ``"auto"``, kept as such in
    :meth:`to_dict` and so in every key); their defaults are defined here and nowhere
    else. Checks that need
    the data (``n_clusters <= n_samples``, one metric per view) are made by
    :meth:`for_data`. Pairs are kept as tuples of floats and a metric list as a tuple.

    Raises
    ------
    TypeError, ValueError
        Naming the parameter and the value.

    Examples
    --------
    >>> from fastmice import EnsembleParams
    >>> params = EnsembleParams(4, n_groups=10, random_state=0).for_data(500, 2)
    >>> params.metric, params.root_seed == EnsembleParams(4, random_state=0).root_seed
    (('euclidean', 'euclidean'), True)
    """

    n_clusters: int | str
    n_groups: int = 20
    n_anchors: int = 1000
    n_neighbors: int = 5
    feature_ratio: tuple[float, float] = (0.2, 0.8)
    base_clusters: tuple[float, float] = (1, 2)
    metric: str | tuple[str, ...] | None = None
    mode: str = "paper"
    random_state: Any = None
    n_jobs: int | None = None

    def __post_init__(self) -> None:
        normalise = functools.partial(object.__setattr__, self)
        if self.n_clusters == AUTO:
            k = 1  # the base clusterings' k then comes from the data's size
        else:
            if isinstance(self.n_clusters, str):
                raise ValueError(f"n_clusters={self.n_clusters!r} must be an int >= 2 or "
                                 f"'auto'.")
            k = check_int("n_clusters", self.n_clusters, 2)
            normalise("n_clusters", k)
        for name in ("n_groups", "n_anchors", "n_neighbors"):
            normalise(name, check_int(name, getattr(self, name), 1))
        normalise("feature_ratio", _check_pair("feature_ratio", self.feature_ratio, 0.0, 1.0))
        base = _check_pair("base_clusters", self.base_clusters, 0.0, None)
        if base[0] * k < 1:
            raise ValueError(f"base_clusters={self.base_clusters!r} gives base clusterings "
                             f"with fewer than 1 cluster for n_clusters={k}.")
        normalise("base_clusters", base)
        normalise("metric", _check_metric(self.metric))
        if self.mode not in MODES:
            raise ValueError(f"Unknown mode {self.mode!r}; expected one of {MODES}.")
        _check_random_state(self.random_state)
        check_n_jobs(self.n_jobs)

    def for_data(self, n_samples: int, n_views: int) -> EnsembleParams:
        """The same parameters checked against data of ``n_samples`` rows and ``n_views`` views.

        Returns
        -------
        params : EnsembleParams
            With ``metric`` as one name per view; None (the default) becomes the mode's
            default metric: "euclidean" in the paper mode (the official code's), "auto" in
            the best mode (a metric per view from its values, ``fastmice._metric_rule``).
            ``mode`` becomes "paper" above ``fastmice._best.CHOICES.max_samples`` samples
            (None, the default: never; a switch for measurements), its metric rule staying.
        """
        if self.n_clusters == AUTO and n_samples < 3:
            raise ValueError(f"n_clusters='auto' needs at least 3 samples; got {n_samples}.")
        if self.n_clusters != AUTO and self.n_clusters > n_samples:
            raise ValueError(f"n_clusters={self.n_clusters} must be <= n_samples={n_samples}.")
        metric = self.metric
        if metric is None:
            metric = "euclidean" if self.mode == "paper" else "auto"
        metrics = [metric] * n_views if isinstance(metric, str) else metric
        if len(metrics) != n_views:
            raise ValueError(f"metric has {len(metrics)} entries; expected one per view "
                             f"({n_views}).")
        from fastmice import _best

        limit = _best.CHOICES.max_samples
        mode = "paper" if limit is not None and n_samples > limit else self.mode
        return replace(self, metric=tuple(metrics), mode=mode)

    def reference_k(self, n_samples: int) -> int:
        """The k the base clusterings' k is drawn around: ``n_clusters``, or with ``"auto"``
        :func:`fastmice._auto_k.auto_reference_k` of the number of samples."""
        if self.n_clusters != AUTO:
            return int(self.n_clusters)
        from fastmice._auto_k import auto_reference_k

        return auto_reference_k(n_samples)

    @functools.cached_property
    def root_seed(self) -> int:
        """:func:`resolve_seed` of ``random_state``, drawn once per object."""
        return resolve_seed(self.random_state)

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-able values (the inverse of :meth:`from_dict`).

        Raises
        ------
        TypeError
            If ``random_state`` is a generator: only an int (or None) can be written down.
        """
        if not (self.random_state is None or isinstance(self.random_state, numbers.Integral)):
            raise TypeError(f"random_state must be an int to be stored; got "
                            f"{type(self.random_state).__name__}.")
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> EnsembleParams:
        """Rebuild the parameters from :meth:`to_dict` output (validated again)."""
        return cls(**values)


#: The default of every parameter that has one (all but ``n_clusters``), by name.
DEFAULTS = SimpleNamespace(**{f.name: f.default for f in fields(EnsembleParams)
                              if f.default is not MISSING})

#: The ``random_state`` of a pipeline run that is given none. The estimator keeps
#: scikit-learn's ``None`` (fresh randomness); a stored run must be reproducible from its
#: record and a rerun must find its own artifacts, so the pipeline starts from this seed.
PIPELINE_RANDOM_STATE = 0
