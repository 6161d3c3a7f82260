"""How much memory a fit needs, from the data's shape and the parameters alone.

The estimate follows what the steps hold at once (their largest arrays, a little generously):
the view groups running side by side, each with its search buffers, its graph and its base
clustering's working set, then the consensus with its incidence matrix, samples and
embedding blocks. Views held by the caller are counted only when asked (a pipeline reads
them from disk a block of rows at a time). The command line compares it with the memory the
machine has free, before any work starts.

>>> from fastmice import EnsembleParams
>>> estimate = estimate_memory(EnsembleParams(400), 398_191, [944, 576, 512, 640])
>>> 1 < estimate.total / 2**30 < 6
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from fastmice._consensus import (
    BASE_KMEANS_SAMPLE,
    BASE_PER_CLUSTER,
    BASE_SAMPLE,
    CONSENSUS_KMEANS_SAMPLE,
    CONSENSUS_PER_CLUSTER,
    CONSENSUS_SAMPLE,
)
from fastmice._eigen import DENSE_MAX
from fastmice._graphs import SEARCH_BLOCK_ROWS
from fastmice._parallel import BLOCK_ROWS
from fastmice._params import AUTO, EnsembleParams

__all__ = ["MemoryEstimate", "estimate_memory"]

#: What the interpreter and the libraries take before any data (numpy, scipy, sklearn).
BASELINE = 300 * 2**20
_INDEX, _FLOAT = 8, 8


@dataclass(frozen=True)
class MemoryEstimate:
    """Peak bytes of a fit, and of its two phases.

    Attributes
    ----------
    total : int
        ``baseline + views + max(groups, consensus)``.
    groups : int
        ``n_workers`` view groups at once (search, graph, base clustering).
    consensus : int
    views : int
        The views, when they are held in memory.
    """

    total: int
    groups: int
    consensus: int
    views: int

    def describe(self) -> str:
        """``"4.2 GB (view groups 3.1 GB, consensus 1.2 GB)"``."""
        return (f"{_gb(self.total)} (view groups {_gb(self.groups)}, consensus "
                f"{_gb(self.consensus)}" + (f", views {_gb(self.views)}" if self.views else "")
                + ")")


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def _group_bytes(params: EnsembleParams, n_samples: int, widest: int, itemsize: int) -> int:
    """One view group at its largest: a one-view group of the widest view, top base k."""
    p = min(params.n_anchors, n_samples)
    k_top = min(n_samples, math.floor(params.base_clusters[1] * params.n_clusters))
    columns = max(p, k_top)
    sampled = math.ceil(params.feature_ratio[1] * widest)
    entries = n_samples * max(params.n_neighbors, 8)  # graph entries (8: four views x 2)
    block = min(SEARCH_BLOCK_ROWS, n_samples)
    search = (2 * block * sampled * itemsize                  # a block, a rep-cluster of it
              + p * (10 * params.n_neighbors + 1) * sampled * itemsize  # neighbourhoods
              + 10 * p * sampled * itemsize)                  # hybrid selection candidates
    graph = entries * (_INDEX + _FLOAT) * 3                   # found, weights, CSR
    sample = min(n_samples, max(BASE_SAMPLE or 0, BASE_KMEANS_SAMPLE, BASE_PER_CLUSTER * k_top))
    tcut = (entries * (4 + _FLOAT) * 4                         # B, R, float32 R, scaled B
            + columns * columns * _FLOAT * 3                   # dense column graph, eigh
            + sample * k_top * _FLOAT                          # k-means sample
            + 2 * BLOCK_ROWS * k_top * 4                       # score blocks
            + n_samples * _FLOAT * 4)                          # norms, labels
    return search + graph + tcut


def _consensus_bytes(params: EnsembleParams, n_samples: int) -> int:
    k, m = params.n_clusters, params.n_groups
    k_mean = min(n_samples, params.base_clusters[1] * k)
    columns = int(m * k_mean)
    entries = n_samples * m
    sample = min(n_samples, max(CONSENSUS_SAMPLE, CONSENSUS_PER_CLUSTER * k))
    kmeans_sample = min(n_samples, max(CONSENSUS_KMEANS_SAMPLE, CONSENSUS_PER_CLUSTER * k))
    width = k + max(16, k // 5)
    side = min(n_samples, columns)
    eigen = (sample * m * (4 + _FLOAT) * 3 + columns * width * _FLOAT * 4
             + (side * side * _FLOAT * 2 if side <= DENSE_MAX else 0))
    return (entries * _INDEX                       # base labels
            + entries * (4 + _FLOAT) * 4           # incidence, its used columns, R, float32 R
            + eigen
            + kmeans_sample * k * 4 * 2            # k-means sample and its scores
            + 2 * BLOCK_ROWS * k * 4 * 2           # embedding and score blocks
            + k * columns * 12 + columns * k * _FLOAT * 2  # centre sums, U U^T-free products
            + n_samples * _FLOAT * 4)              # norms, labels, values


def estimate_memory(params: EnsembleParams, n_samples: int, n_features: Sequence[int], *,
                    n_workers: int = 2, itemsize: int = 4,
                    views_in_memory: bool = False) -> MemoryEstimate:
    """Peak memory of an ensemble fit, in bytes.

    Parameters
    ----------
    params : EnsembleParams
    n_samples : int
    n_features : sequence of int
        Features of each view.
    n_workers : int, default=2
        View groups computed at once.
    itemsize : int, default=4
        Bytes of a view's value (4: float32, 8: float64).
    views_in_memory : bool, default=False
        Count the views themselves (dense) as held in memory.

    Returns
    -------
    estimate : MemoryEstimate
    """
    widest = max(n_features)
    if params.n_clusters == AUTO:  # sized as the base clusterings' reference k
        params = replace(params, n_clusters=params.reference_k(n_samples))
    groups = max(1, n_workers) * _group_bytes(params, n_samples, widest, itemsize)
    consensus = _consensus_bytes(params, n_samples)
    views = n_samples * sum(n_features) * itemsize if views_in_memory else 0
    return MemoryEstimate(BASELINE + views + max(groups, consensus), groups, consensus, views)
