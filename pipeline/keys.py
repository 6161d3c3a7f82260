"""Content keys of the pipeline's artifacts, and the small dataset refs the tasks pass around.

Every key is ``content_key(kind, what it was computed from, CODE_VERSION)``, and the
parameters enter it as the whole :class:`fastmice.EnsembleParams` (``to_dict()``), directly
or through the key of an input, less only the fields declared below as unable to change
that artifact. A new parameter is therefore in every key unless someone says otherwise::

    view groups    = (anchor-batch fingerprints, params - ensemble size, start, count)
    group anchors  = (anchor-batch fingerprints, params - ensemble size, spec)
    graph rows     = (group-anchors key, batch fingerprint)        # one piece per batch
    base labels    = ([graph-rows keys, in batch order], spec)
    consensus      = ([base-labels keys, in group order], params)
    labels table   = (consensus key, [batch fingerprints], cluster ids renamed)

(``params`` never includes :data:`EXECUTION_ONLY`.) The *anchor batches* are the batches a
view group's anchors were drawn from (those of the dataset when the ensemble was created);
graph rows of any later batch are placed with those anchors, so a batch's rows never change
once computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import fastmice
from fastmice import EnsembleParams
from storage import content_key

__all__ = [
    "ANCHORS",
    "BASE_LABELS",
    "BASE_PARTITION",
    "CONSENSUS",
    "ENSEMBLE_SIZE",
    "EXECUTION_ONLY",
    "GRAPH_ROWS",
    "LABELS",
    "RUN",
    "VIEW_GROUPS",
    "anchors_key",
    "base_key",
    "consensus_key",
    "dataset_ref",
    "group_row_keys",
    "labels_key",
    "rows_key",
    "specs_key",
]

# Artifact kinds (nouns) and the run-record kind.
VIEW_GROUPS = "view-groups"
ANCHORS = "group-anchors"
GRAPH_ROWS = "anchor-graph"
BASE_LABELS = "base-labels"
BASE_PARTITION = "base-partition"
CONSENSUS = "consensus"
LABELS = "labels"
RUN = "run"

#: Parameters in no key: they change how a run executes, never what it computes.
EXECUTION_ONLY = ("n_jobs",)
#: Parameters in no view group's keys: group ``g`` is the same in an ensemble of any size
#: (``fastmice.draw_view_groups``), which is what lets ``extend`` reuse the old groups.
ENSEMBLE_SIZE = ("n_groups",)


def _params(params: EnsembleParams, leave_out: Sequence[str] = ()) -> dict[str, Any]:
    values = params.to_dict()
    for name in (*EXECUTION_ONLY, *leave_out):
        del values[name]
    if values.get("mode") == "paper":  # keyed as before the mode existed: stores stay reusable
        del values["mode"]
    return values


def dataset_ref(manifest: Mapping[str, Any], batch_ids: Sequence[int] | None = None) -> dict:
    """A small, JSON-able reference to some batches of a registered dataset.

    Parameters
    ----------
    manifest : dict
        ``DatasetStore.manifest(name)``.
    batch_ids : sequence of int, optional
        The batches, in order (default: all).

    Returns
    -------
    ref : dict
        ``name``, ``n_views``, ``n_features``, ``n_samples`` (of the chosen batches),
        ``fingerprint`` (``content_key`` of their fingerprints) and ``batches``: a list of
        ``{"batch_id", "fingerprint", "n_samples"}``.

    Raises
    ------
    ValueError
        If a batch id is not in the dataset.
    """
    batches = manifest["batches"]
    ids = [b["batch_id"] for b in batches] if batch_ids is None else list(batch_ids)
    known = {b["batch_id"]: b for b in batches}
    missing = [b for b in ids if b not in known]
    if missing:
        raise ValueError(f"Dataset {manifest['name']!r} has no batch {missing}; it has batches "
                         f"{sorted(known)}.")
    chosen = [{"batch_id": int(b), "fingerprint": known[b]["fingerprint"],
               "n_samples": int(known[b]["n_samples"])} for b in ids]
    return {
        "name": manifest["name"],
        "n_views": int(manifest["n_views"]),
        "n_features": [int(d) for d in manifest["n_features"]],
        "n_samples": sum(b["n_samples"] for b in chosen),
        "fingerprint": content_key([b["fingerprint"] for b in chosen]),
        "batches": chosen,
    }


def _fingerprints(data: Mapping[str, Any]) -> list[str]:
    return [b["fingerprint"] for b in data["batches"]]


def specs_key(anchor_data: Mapping[str, Any], params: EnsembleParams, start: int,
              n_groups: int) -> str:
    """Key of the drawn view-group specs ``start .. start + n_groups - 1``."""
    return content_key(VIEW_GROUPS, _fingerprints(anchor_data), _params(params, ENSEMBLE_SIZE),
                       int(start), int(n_groups), fastmice.CODE_VERSION)


def anchors_key(anchor_data: Mapping[str, Any], params: EnsembleParams,
                spec: Mapping[str, Any]) -> str:
    """Key of a group's anchors (and of the graph built with them)."""
    return content_key(ANCHORS, _fingerprints(anchor_data), _params(params, ENSEMBLE_SIZE),
                       dict(spec), fastmice.CODE_VERSION)


def rows_key(anchors: str, batch_fingerprint: str) -> str:
    """Key of one batch's rows of a group's graph, placed with the anchors ``anchors``."""
    return content_key(GRAPH_ROWS, anchors, batch_fingerprint, fastmice.CODE_VERSION)


def group_row_keys(anchor_data: Mapping[str, Any], data: Mapping[str, Any],
                   params: EnsembleParams, spec: Mapping[str, Any]) -> list[str]:
    """Keys of the graph rows of every batch of ``data``, in batch order."""
    anchors = anchors_key(anchor_data, params, spec)
    return [rows_key(anchors, fp) for fp in _fingerprints(data)]


def _warm(init: Mapping[str, Any] | None, **rule: str) -> list[dict[str, str]]:
    """The key part of a warm start: the partition started from and how it is carried on
    (nothing for a cold start)."""
    return [] if init is None else [{"warm_start": init["key"], **rule}]


def base_key(row_keys: Sequence[str], spec: Mapping[str, Any],
             init: Mapping[str, Any] | None = None) -> str:
    """Key of a group's base clustering of the samples whose graph rows are ``row_keys``
    (extending the stored partition ``init`` to new samples, if given)."""
    return content_key(BASE_LABELS, list(row_keys), dict(spec), fastmice.CODE_VERSION,
                       *_warm(init, rule="old samples keep their labels"))


def consensus_key(base_keys: Sequence[str], params: EnsembleParams,
                  init: Mapping[str, Any] | None = None) -> str:
    """Key of the consensus of the base clusterings ``base_keys`` (in group order; started
    from the stored consensus ``init``, if given)."""
    return content_key(CONSENSUS, list(base_keys), _params(params), fastmice.CODE_VERSION,
                       *_warm(init))


def labels_key(consensus: str, data: Mapping[str, Any],
               mapping: Sequence[Sequence[int]] | None = None) -> str:
    """Key of the labels table (sample ids + labels) of a consensus over ``data`` (its
    cluster ids renamed by ``mapping``, ``[[consensus id, label], ...]``, unless that is
    None or the identity)."""
    renamed = [] if mapping is None or all(a == b for a, b in mapping) else \
        [{"relabel": [[int(a), int(b)] for a, b in mapping]}]
    return content_key(LABELS, consensus, _fingerprints(data), fastmice.CODE_VERSION, *renamed)
