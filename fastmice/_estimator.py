"""The FastMICE estimator: the composition of the step functions."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted

from fastmice._best import informed_labels, missing_rows
from fastmice._consensus import cluster_group
from fastmice._graphs import GroupAnchors, build_group_graph, transform_group_graph
from fastmice._joint_consensus import consensus_with_joint
from fastmice._memory import estimate_memory
from fastmice._metric_rule import resolve_metrics
from fastmice._parallel import map_threads, team, team_size
from fastmice._params import DEFAULTS, EnsembleParams
from fastmice._specs import ViewGroupSpec, draw_view_groups, longest_first
from fastmice._tcut import BipartitePartition
from fastmice._validation import check_views

__all__ = ["FastMICE", "fast_mice", "groups_at_once", "groups_within"]


def _fit_group(Xs, spec: ViewGroupSpec, empty, mode: str
               ) -> tuple[GroupAnchors, BipartitePartition]:
    B, anchors = build_group_graph(Xs, spec, empty)
    return anchors, cluster_group(B, spec, mode=mode, n_jobs=team_size())


def predict_group_labels(Xs, spec, anchors, partition, empty, mode: str) -> np.ndarray:
    """Base labels of new samples ``Xs`` in one fitted view group, shape (n_new,): their
    graph rows through the group's ``anchors`` (``empty``: :func:`fastmice.missing_rows`),
    assigned by its ``partition``; in the best mode -1 where the group knows nothing."""
    B = transform_group_graph(Xs, spec, anchors, empty)
    labels = partition.predict(B)
    return informed_labels(B, labels) if mode == "best" else labels



#: Below this many samples the groups run one after the other whatever ``n_jobs`` says: a
#: group's work is then mostly Python holding the GIL, and threads cost more than they give
#: (measured: 169 samples 1.4x slower in two threads, 500-600 level, 2,500 1.4x faster).
THREADS_MIN_SAMPLES = 400
#: Most view groups computed at once (None: one a thread). Each holds its search buffers
#: (up to 2 x 65,536 rows of a view's sampled columns); the team's other threads take row
#: blocks of the groups running, so fewer groups at once bound the memory, not the cores.
GROUPS_AT_ONCE: int | None = None
#: Peak memory each further view group at once adds to a fit: ``GROUP_BYTES`` plus
#: ``GROUP_BYTES_PER_SAMPLE`` per sample (the search's block buffers do not grow with the
#: samples, a group's graph and base clustering do). An upper envelope of the measured growth
#: of the peak RSS with the groups at once (944/576/512/640 float32, k = 400): 50,000
#: samples 121 MB a group (2 -> 16 threads), 100,000 96 MB (1 -> 4 groups at once, 4
#: threads), 398,191 279 MB (2 -> 16 threads); docs/scale.md "Memory per worker".
GROUP_BYTES = 96 * 2**20
GROUP_BYTES_PER_SAMPLE = 500
_groups_cap: contextvars.ContextVar[int | None] = contextvars.ContextVar("groups_at_once",
                                                                           default=None)


@contextlib.contextmanager
def groups_at_once(cap: int | None) -> Iterator[None]:
    """Within it, this thread's fits and predictions compute at most ``cap`` view groups at
    once (None: one a thread, or :data:`GROUPS_AT_ONCE`); the threads not running a group
    help the groups running. Bounds the memory, not the cores; the labels do not depend on
    it.

    >>> from fastmice.datasets import make_multiview_blobs
    >>> Xs, _ = make_multiview_blobs(n_samples=500, n_clusters=3, random_state=0)
    >>> with groups_at_once(1):
    ...     labels = FastMICE(3, random_state=0, n_jobs=2).fit(Xs).labels_
    """
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ValueError(f"groups at once must be None or an int >= 1; got {cap!r}.")
    token = _groups_cap.set(cap)
    try:
        yield
    finally:
        _groups_cap.reset(token)


def groups_within(memory_limit: int, params: EnsembleParams, n_samples: int,
                  n_features: Sequence[int], *, itemsize: int = 4,
                  views_in_memory: bool = True) -> int:
    """The most view groups at once whose fit stays within ``memory_limit`` bytes.

    A fit with one group at once needs :func:`fastmice.estimate_memory` ``(n_workers=1)``;
    each further group adds :func:`further_group_bytes`. At least 1 (a limit below one
    group is for the caller to refuse).

    Parameters
    ----------
    memory_limit : int
        Bytes the fit may use.
    params : EnsembleParams
    n_samples : int
    n_features : sequence of int
        Features of each view.
    itemsize : int, default=4
        Bytes of a view's value.
    views_in_memory : bool, default=True
        The views are held in memory (the library's ``fit``); False where they are read
        from disk a block of rows at a time (the pipeline).

    Returns
    -------
    groups : int
        For :func:`groups_at_once`, or as the number of workers of a pipeline.
    """
    one = estimate_memory(params, n_samples, n_features, n_workers=1, itemsize=itemsize,
                          views_in_memory=views_in_memory).total
    return int(max(1, 1 + (memory_limit - one) // further_group_bytes(n_samples)))


def further_group_bytes(n_samples: int) -> int:
    """Bytes each view group at once beyond the first adds to a fit's peak:
    ``GROUP_BYTES + GROUP_BYTES_PER_SAMPLE * n_samples`` (measured; see there)."""
    return GROUP_BYTES + GROUP_BYTES_PER_SAMPLE * max(0, n_samples)


def _run_groups(n_jobs: int | None, function, arguments: list[tuple], n_samples: int,
                specs: list[ViewGroupSpec]) -> list:
    """Run ``function(*args)`` for every group, in ``n_jobs`` threads; results in group order.

    Every step runs on one BLAS thread (``fastmice._blas``), so the threads are where the
    cores go, and the labels do not depend on ``n_jobs``. In threads the groups start
    longest first (:func:`longest_first`), in the calling thread's team
    (``fastmice._parallel``): a thread with no group left helps the groups still running.
    At most :func:`groups_at_once` groups run at once.
    """
    if effective_n_jobs(n_jobs) == 1 or n_samples < THREADS_MIN_SAMPLES:
        return [function(*args) for args in arguments]
    order = longest_first(specs)
    cap = _groups_cap.get()
    results = map_threads(lambda i: function(*arguments[i]), order, effective_n_jobs(n_jobs),
                          at_once=GROUPS_AT_ONCE if cap is None else cap)
    in_group_order = [None] * len(arguments)
    for i, result in zip(order, results, strict=True):
        in_group_order[i] = result
    return in_group_order


class FastMICE(ClusterMixin, BaseEstimator):
    """Fast multi-view clustering via ensembles.

    Each of ``n_groups`` random view groups gets random feature subsets, anchors by hybrid
    representative selection, an approximate K-nearest-anchor bipartite graph shared by its
    views, and a transfer-cut base clustering; a consensus bipartite graph over all base
    clusterings gives the final labels. Time and memory are linear in the number of samples.

    Parameters
    ----------
    n_clusters : int or "auto"
        Number of clusters k. With ``"auto"``, base clusterings spread their k over
        ``[2, clip(N / 4, 15, 400)]`` and k is the candidate with the largest eigengap, weighted
        by ``ln(k) ** 0.5``, of a 10-nearest-neighbour graph of a sample of the joint space in
        the best mode (:mod:`fastmice._auto_k_graph`), or, weighted by ``ln(k) ** 1.5``, of
        the consensus graph of the base clusterings finer than it in the paper mode
        (:mod:`fastmice._auto_k`).
    n_groups : int, default=20
        Number of view groups M (= base clusterings).
    n_anchors : int, default=1000
        Anchors p per view group.
    n_neighbors : int, default=5
        Nearest anchors K per sample and view group.
    feature_ratio : (float, float), default=(0.2, 0.8)
        Range of the random fraction of features each view keeps in a group.
    base_clusters : (float, float), default=(1, 2)
        Range of base-cluster counts as multiples of ``n_clusters`` ([k, 2k]).
    metric : {"euclidean", "cosine", "hellinger", "auto"}, list of them, or None, \
default=None
        One for all views or one per view (text views want cosine; "hellinger" is the
        euclidean distance between the element-wise square roots of non-negative rows, for
        histograms). "auto" chooses per view from its values: cosine for a sparse
        non-negative view (text, links), in the best mode hellinger for a compositional one
        (non-negative, every row the same sum), else euclidean
        (``fastmice._metric_rule``); the choice is in ``metrics_``. None: the
        mode's default, "euclidean" in the paper mode (as the official code), "auto" in the
        best mode.
    mode : {"paper", "best"}, default="paper"
        "paper": the published algorithm as its official code computes it. "best": the
        choices of ``fastmice._best`` beyond it (empty rows as missing, base clusterings
        weighted by agreement, the best of several consensus replicates): better and
        steadier clusters on the benchmarks, at most twice the time (docs/quality.md).
    random_state : int, RandomState, Generator or None, default=None
        Every random draw flows from it.
    n_jobs : int or None, default=None
        View groups computed in parallel threads (None means 1; -1 all cores). Data of
        fewer than 400 samples run serially (threads cost more than they give there). The
        labels do not depend on it.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    base_labels_ : ndarray of shape (n_samples, n_groups)
    view_groups_ : list of ViewGroupSpec
    group_anchors_ : list of GroupAnchors
    base_partitions_ : list of BipartitePartition
    consensus_ : ConsensusPartition
    n_clusters_ : int
        The number of clusters of ``labels_`` (``n_clusters``, or the one chosen).
    k_candidates_ : list of (int, float) or None
        With ``n_clusters="auto"``: every candidate k with its score, best first (what the
        score is: ``consensus_.k_choice.rule``).
    root_seed_ : int
        Root seed drawn from ``random_state`` (``EnsembleParams.root_seed``).
    n_views_ : int
    n_features_in_ : list of int
    metrics_ : tuple of str
        The metric each view was compared with ("auto" resolved).
    mode_ : str
        The mode the ensemble was fitted in (``mode``; "paper" above
        ``fastmice._best.CHOICES.max_samples`` samples where that is set).

    References
    ----------
    D. Huang, C.-D. Wang, J.-H. Lai, "Fast Multi-view Clustering via Ensembles: Towards
    Scalability, Superiority, and Simplicity", IEEE TKDE 35(11), 2023,
    doi:10.1109/TKDE.2023.3236698.

    Examples
    --------
    >>> from fastmice import FastMICE
    >>> from fastmice.datasets import make_multiview_blobs
    >>> from fastmice.metrics import clustering_scores
    >>> Xs, y = make_multiview_blobs(n_samples=500, n_clusters=4, random_state=0)
    >>> labels = FastMICE(n_clusters=4, random_state=0).fit_predict(Xs)
    >>> clustering_scores(y, labels)["nmi"] > 0.9
    True
    """

    def __init__(self, n_clusters, *, n_groups=DEFAULTS.n_groups, n_anchors=DEFAULTS.n_anchors,
                 n_neighbors=DEFAULTS.n_neighbors, feature_ratio=DEFAULTS.feature_ratio,
                 base_clusters=DEFAULTS.base_clusters, metric=DEFAULTS.metric,
                 mode=DEFAULTS.mode, random_state=DEFAULTS.random_state,
                 n_jobs=DEFAULTS.n_jobs):
        self.n_clusters = n_clusters
        self.n_groups = n_groups
        self.n_anchors = n_anchors
        self.n_neighbors = n_neighbors
        self.feature_ratio = feature_ratio
        self.base_clusters = base_clusters
        self.metric = metric
        self.mode = mode
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _check_params(self, n_samples: int, n_views: int) -> EnsembleParams:
        """The parameters as one validated :class:`EnsembleParams` for this data."""
        return EnsembleParams(**self.get_params()).for_data(n_samples, n_views)

    def fit(self, Xs, y=None):
        """Cluster the samples described by the views ``Xs``.

        Parameters
        ----------
        Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
        y : ignored

        Returns
        -------
        self : FastMICE
        """
        Xs = check_views(Xs)
        n_samples = Xs[0].shape[0]
        params = self._check_params(n_samples, len(Xs))
        params = replace(params, metric=resolve_metrics(Xs, params.metric, params.mode))
        seed = params.root_seed
        specs = draw_view_groups([X.shape[1] for X in Xs], n_samples, params, seed=seed)
        threads = 1 if n_samples < THREADS_MIN_SAMPLES else effective_n_jobs(self.n_jobs)
        with team(threads):  # every stage below shares these threads
            empty = missing_rows(Xs, params.mode)
            fitted = _run_groups(self.n_jobs, _fit_group,
                                 [(Xs, spec, empty, params.mode) for spec in specs], n_samples,
                                 specs)
            base_labels = np.column_stack([partition.labels_ for _, partition in fitted])
            consensus = consensus_with_joint(Xs, base_labels, params,
                                             n_jobs=effective_n_jobs(self.n_jobs))
        self.view_groups_ = specs
        self.group_anchors_ = [anchors for anchors, _ in fitted]
        self.base_partitions_ = [partition for _, partition in fitted]
        self.base_labels_ = base_labels
        self.consensus_ = consensus
        self.labels_ = self.consensus_.labels_
        self.n_clusters_ = self.consensus_.n_clusters
        choice = self.consensus_.k_choice
        self.k_candidates_ = None if choice is None else choice.ranked()
        self.root_seed_ = seed
        self.metrics_ = params.metric
        self.mode_ = params.mode
        self.n_views_ = len(Xs)
        self.n_features_in_ = [X.shape[1] for X in Xs]
        return self

    def predict(self, Xs) -> np.ndarray:
        """Label new samples through each group's anchors and embedding, then the consensus.

        Parameters
        ----------
        Xs : list of array-like or sparse matrix, each of shape (n_new, n_features_v)

        Returns
        -------
        labels : ndarray of shape (n_new,)
        """
        check_is_fitted(self, "consensus_")
        Xs = check_views(Xs, n_views=self.n_views_, n_features=self.n_features_in_)
        empty = missing_rows(Xs, self.mode_)
        base = _run_groups(self.n_jobs, predict_group_labels, [
            (Xs, spec, anchors, partition, empty, self.mode_)
            for spec, anchors, partition in zip(
                self.view_groups_, self.group_anchors_, self.base_partitions_, strict=True)],
            Xs[0].shape[0], self.view_groups_)
        return self.consensus_.predict(np.column_stack(base), Xs,
                                       effective_n_jobs(self.n_jobs))


def fast_mice(Xs, n_clusters: int, **params) -> np.ndarray:
    """``FastMICE(n_clusters, **params).fit(Xs).labels_``: labels of shape (n_samples,)."""
    return FastMICE(n_clusters, **params).fit(Xs).labels_


