"""View-group specifications: the ensemble-level random draws of FastMICE (SPEC section 1)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fastmice._auto_k import auto_base_clusters
from fastmice._params import AUTO, EnsembleParams

__all__ = ["ViewGroupSpec", "draw_view_groups", "group_rng", "longest_first"]


def group_rng(seed: int, *stream: int) -> np.random.Generator:
    """An independent generator for one named stream of one seed (prefix-stable)."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=tuple(stream)))


# Streams inside one group: the graph (anchors, searches) and the partition (Tcut k-means).
GRAPH_STREAM = 0
PARTITION_STREAM = 1
# Streams under the root seed: group g uses (GROUPS_STREAM, g); the consensus its own.
GROUPS_STREAM = 0
CONSENSUS_STREAM = 1


@dataclass(frozen=True)
class ViewGroupSpec:
    """Everything that defines one view group and its base clustering.

    A small, JSON-serialisable record: with the data it determines the group's bipartite
    graph and base clustering completely, so any subset of groups can be computed in any
    order, in any process.

    Attributes
    ----------
    group_index : int
        Position of the group in the ensemble (0-based).
    seed : int
        The group's own seed; every random draw inside the group flows from it.
    views : tuple of int
        Member views, in the order their anchor blocks appear in the graph.
    feature_indices : tuple of tuple of int
        Sorted sampled feature columns, one tuple per member view.
    metrics : tuple of str
        "euclidean", "cosine" or "hellinger", one per member view.
    n_anchors : int
        Anchors per member view (``ceil(min(p, N) / |G|)``, at most N).
    n_neighbors : int
        Nearest anchors per sample and member view (``ceil(K / |G|)``).
    n_base_clusters : int
        Number of clusters of the group's base clustering.
    """

    group_index: int
    seed: int
    views: tuple[int, ...]
    feature_indices: tuple[tuple[int, ...], ...] = field(repr=False)
    metrics: tuple[str, ...]
    n_anchors: int
    n_neighbors: int
    n_base_clusters: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (the inverse of :meth:`from_dict`)."""
        return {
            "group_index": self.group_index,
            "seed": self.seed,
            "views": list(self.views),
            "feature_indices": [list(f) for f in self.feature_indices],
            "metrics": list(self.metrics),
            "n_anchors": self.n_anchors,
            "n_neighbors": self.n_neighbors,
            "n_base_clusters": self.n_base_clusters,
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> ViewGroupSpec:
        """Rebuild a spec from :meth:`to_dict` output."""
        return cls(
            group_index=int(record["group_index"]),
            seed=int(record["seed"]),
            views=tuple(int(v) for v in record["views"]),
            feature_indices=tuple(tuple(map(int, f)) for f in record["feature_indices"]),
            metrics=tuple(str(m) for m in record["metrics"]),
            n_anchors=int(record["n_anchors"]),
            n_neighbors=int(record["n_neighbors"]),
            n_base_clusters=int(record["n_base_clusters"]),
        )


def _draw_one_group(seed: int, group_index: int, n_features: Sequence[int], n_samples: int,
                    n_clusters: int, n_anchors: int, n_neighbors: int,
                    feature_ratio: tuple[float, float], base_clusters: tuple[float, float],
                    metrics: Sequence[str], all_views: bool = False, best: bool = False
                    ) -> ViewGroupSpec:
    rng = group_rng(seed, GROUPS_STREAM, group_index)
    n_views = len(n_features)
    low_k = max(1, math.ceil(base_clusters[0] * n_clusters))
    high_k = max(low_k, math.floor(base_clusters[1] * n_clusters))
    if best:
        from fastmice._best import base_k_range

        low_k, high_k = base_k_range(low_k, high_k, n_samples, "best")
    # Deviation: the official code fails when a base k exceeds N; we cap it at N.
    n_base_clusters = min(int(rng.integers(low_k, high_k + 1)), n_samples)
    group_size = int(rng.integers(1, n_views + 1))
    ratios = rng.uniform(feature_ratio[0], feature_ratio[1], size=n_views)
    sampled = [
        np.sort(rng.choice(d, max(1, math.ceil(r * d)), replace=False))
        for d, r in zip(n_features, ratios, strict=True)
    ]
    views = rng.choice(n_views, group_size, replace=False)
    if all_views:  # the best mode's groups that see every view (the same draws before)
        views, group_size = np.arange(n_views), n_views
    p = min(n_anchors, n_samples)
    return ViewGroupSpec(
        group_index=group_index,
        seed=int(rng.integers(np.iinfo(np.int64).max)),
        views=tuple(int(v) for v in views),
        feature_indices=tuple(tuple(sampled[v].tolist()) for v in views),
        metrics=tuple(metrics[v] for v in views),
        n_anchors=min(math.ceil(p / group_size), n_samples),
        n_neighbors=math.ceil(n_neighbors / group_size),
        n_base_clusters=n_base_clusters,
    )


def draw_view_groups(n_features: Sequence[int], n_samples: int, params: EnsembleParams, *,
                     seed: int, start: int = 0, n_groups: int | None = None
                     ) -> list[ViewGroupSpec]:
    """Draw the specs of view groups ``start .. start + n_groups - 1``.

    Group ``g`` depends only on ``(seed, g)``, the data's shape and the parameters, never on
    how many groups are drawn, so an ensemble can be extended with more groups and the old
    ones stay as they were.

    Parameters
    ----------
    n_features : sequence of int
        Number of features of each view.
    n_samples : int
        Number of samples (caps the anchor and base-cluster counts).
    params : EnsembleParams
        Its ``n_clusters`` (base clusterings draw their k in ``[base_clusters[0] * k,
        base_clusters[1] * k]``, in the best mode up to ``sqrt(N)`` if more:
        :func:`fastmice._best.base_k_range`; with ``"auto"``, spread over
        ``[2, K]`` by :func:`fastmice._auto_k.auto_base_clusters`),
        ``n_anchors`` (p per group, split evenly over its views), ``n_neighbors`` (K per
        sample and group, split over its views), ``feature_ratio`` (range of the
        per-(group, view) feature-sampling ratio), ``base_clusters`` and ``metric`` (one for
        all views or one per view).
    seed : int
        Root seed of the ensemble (``params.root_seed``).
    start : int, default=0
    n_groups : int, optional
        How many groups to draw (default: ``params.n_groups``).

    Returns
    -------
    specs : list of ViewGroupSpec
    """
    count = params.n_groups if n_groups is None else n_groups
    resolved = params.for_data(n_samples, len(n_features))
    metrics, best = resolved.metric, resolved.mode == "best"
    if "auto" in metrics:
        raise ValueError("metric 'auto' must be resolved against the data first "
                         "(fastmice._metric_rule.resolve_metrics).")
    specs = [
        _draw_one_group(seed, g, n_features, n_samples, params.reference_k(n_samples),
                        params.n_anchors, params.n_neighbors, params.feature_ratio,
                        params.base_clusters, metrics,
                        best and sees_all_views(g, metrics), best)
        for g in range(start, start + count)
    ]
    if params.n_clusters == AUTO:  # k spread over the candidates (fastmice._auto_k)
        specs = [replace(s, n_base_clusters=auto_base_clusters(
            seed, s.group_index, n_samples, params.n_anchors)) for s in specs]
    return specs


def sees_all_views(group_index: int, metrics: Sequence[str]) -> bool:
    """Whether group ``group_index`` of a best-mode ensemble takes every view: a share
    (:class:`fastmice._best.BestChoices`) of the groups, evenly spread."""
    from fastmice._best import CHOICES

    share = CHOICES.all_view_groups
    if all(m in ("euclidean", "hellinger") for m in metrics):
        share = CHOICES.all_view_groups_euclidean
    return math.floor((group_index + 1) * share) > math.floor(group_index * share)


#: A base clustering's work in the units of :func:`longest_first`: about that of searching
#: this many sampled feature columns (398,191 samples, k = 400: search 108 thread-seconds for
#: the 20 groups' 16,700 sampled columns, eigen step and k-means 30 for their 20 base
#: clusterings).
BASE_CLUSTERING_COLUMNS = 230


def longest_first(specs: Sequence[ViewGroupSpec | Mapping[str, Any]]) -> list[int]:
    """Positions of ``specs`` (or their dicts) in the order to start them: most work first.

    A group's work is estimated from its sampled feature columns (its anchors and search
    grow with them) plus :data:`BASE_CLUSTERING_COLUMNS`. Started longest first, a few
    workers finish together instead of one working alone at the end (20 groups on two
    threads: 0-0.7 % over a perfect split, against 2-6 % in group order). The order changes
    no result: every group draws from its own seed.
    """
    def columns(spec: ViewGroupSpec | Mapping[str, Any]) -> int:
        indices = spec["feature_indices"] if isinstance(spec, Mapping) else spec.feature_indices
        return sum(len(c) for c in indices)

    work = [columns(s) + BASE_CLUSTERING_COLUMNS for s in specs]
    return sorted(range(len(specs)), key=lambda i: (-work[i], i))
