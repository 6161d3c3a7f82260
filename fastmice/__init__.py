"""fastmice: fast multi-view clustering via ensembles (FastMICE).

The estimator :class:`FastMICE` is the composition of small, pure step functions that a
pipeline can call one at a time: :func:`draw_view_groups`, :func:`build_group_graph`,
:func:`cluster_group` and :func:`consensus_partition`. Its parameters are one
:class:`EnsembleParams`, defined once.
"""

from fastmice._best import informed_labels, missing_rows
from fastmice._consensus import ConsensusPartition, cluster_group, consensus_partition
from fastmice._estimator import (
    FastMICE,
    fast_mice,
    groups_at_once,
    groups_within,
    predict_group_labels,
)
from fastmice._graphs import GroupAnchors, build_group_graph, transform_group_graph
from fastmice._joint_consensus import consensus_with_joint
from fastmice._memory import MemoryEstimate, estimate_memory
from fastmice._metric_rule import resolve_metrics
from fastmice._params import EnsembleParams, resolve_seed
from fastmice._specs import ViewGroupSpec, draw_view_groups, longest_first
from fastmice._stages import record_stages, stage
from fastmice._tcut import BipartitePartition, partition_bipartite_graph
from fastmice._validation import check_views, is_row_reader

__version__ = "0.1.0"


def __getattr__(name: str):
    # `datasets` (synthetic data) and `metrics` load on first use: `import fastmice` stays light.
    if name in ("datasets", "metrics"):
        import importlib

        return importlib.import_module(f"fastmice.{name}")
    raise AttributeError(f"module 'fastmice' has no attribute {name!r}")

# Bumped whenever a change alters the numbers any step computes; part of every artifact key.
CODE_VERSION = "26"

__all__ = [
    "CODE_VERSION",
    "BipartitePartition",
    "ConsensusPartition",
    "EnsembleParams",
    "FastMICE",
    "GroupAnchors",
    "MemoryEstimate",
    "ViewGroupSpec",
    "__version__",
    "build_group_graph",
    "check_views",
    "cluster_group",
    "consensus_partition",
    "consensus_with_joint",
    "datasets",
    "draw_view_groups",
    "estimate_memory",
    "fast_mice",
    "groups_at_once",
    "groups_within",
    "informed_labels",
    "is_row_reader",
    "longest_first",
    "metrics",
    "missing_rows",
    "partition_bipartite_graph",
    "predict_group_labels",
    "record_stages",
    "resolve_metrics",
    "resolve_seed",
    "stage",
    "transform_group_graph",
]
