"""Run records: their ids, what a finished run writes down, and reading them back.

A run record (``store.write_record("run", run_id, record)``) holds the plan (dataset,
batches, the whole parameter object under ``params`` and the derived ``root_seed``), every
view group's artifact refs, what was computed and what was reused, the labels and scores.
:func:`run_summary` is the part the flows return and ``fastmice --json`` prints.
"""

from __future__ import annotations

import datetime as _dt
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import fastmice
from pipeline.keys import RUN
from storage import ArtifactNotFoundError, validate_name

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.plans import Plan

__all__ = ["SUMMARY_KEYS", "GroupOutcome", "list_runs", "new_run_id", "read_run", "run_record",
           "run_summary"]

#: Keys of the run summary the flows return and ``fastmice --json`` prints.
SUMMARY_KEYS = ("run_id", "kind", "parent_run", "dataset", "n_samples", "n_views",
                "n_clusters", "n_groups", "groups_computed", "groups_reused", "work",
                "seconds", "labels_path", "scores", "store")


def read_run(store: Any, run_id: str) -> dict[str, Any]:
    """The record of run ``run_id``.

    Raises
    ------
    ArtifactNotFoundError
        If there is no such run (the message says how to list them).
    """
    validate_name(run_id, "run id")
    try:
        return store.read_record(RUN, run_id)
    except ArtifactNotFoundError:
        raise ArtifactNotFoundError(f"Unknown run {run_id!r} in store {store.url}; "
                                    f"`fastmice runs` lists the runs.") from None


def list_runs(store: Any, dataset: str | None = None) -> list[dict[str, Any]]:
    """Records of every run (of ``dataset`` only, if given), oldest first."""
    runs = [store.read_record(RUN, name) for name in store.list_records(RUN)]
    if dataset is not None:
        runs = [r for r in runs if r["dataset"] == dataset]
    return sorted(runs, key=lambda r: r["created"])


def new_run_id(store: Any, dataset: str, run_name: str | None = None) -> str:
    """``run_name`` if given (it must be new), else ``<dataset>-<yyyymmdd-HHMMSS>-<6 hex>``.

    Raises
    ------
    ValueError
        If ``run_name`` is not a valid name or a run of that name exists.
    """
    if run_name is not None:
        validate_name(run_name, "run name")
        if store.record_version(RUN, run_name):
            raise ValueError(f"A run named {run_name!r} already exists in store {store.url}; "
                             f"choose another run name.")
        return run_name
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{dataset[:100]}-{stamp}-{secrets.token_hex(3)}"


def run_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The summary of a run record (its keys in :data:`SUMMARY_KEYS`; scores only if known)."""
    summary = {k: record.get(k) for k in SUMMARY_KEYS}
    if summary["scores"] is None:
        del summary["scores"]
    return summary


@dataclass(frozen=True)
class GroupOutcome:
    """What the tasks of one view group returned: its graph, later-batch rows, base labels.

    Each is the task's small result dict, with a ``computed`` flag (False: reused).
    """

    graph: dict[str, Any]
    rows: list[dict[str, Any]]
    base: dict[str, Any]

    @property
    def computed(self) -> bool:
        """Whether any task of the group did work."""
        return self.graph["computed"] or any(r["computed"] for r in self.rows) or \
            self.base["computed"]

    def entry(self) -> dict[str, Any]:
        """The group's entry in the run record."""
        rows = {**self.graph["rows"], **{str(r["batch_id"]): r["rows"] for r in self.rows}}
        return {"group": self.graph["group"], "anchors": self.graph["anchors"], "rows": rows,
                "labels": self.base["labels"], "partition": self.base["partition"],
                "computed": self.computed}


def _work(groups: list[GroupOutcome], consensus: dict[str, Any]) -> dict[str, Any]:
    rows = [r["computed"] for g in groups for r in g.rows]
    return {"graphs_built": sum(g.graph["computed"] for g in groups),
            "row_batches_computed": sum(rows),
            "row_batches_reused": len(rows) - sum(rows),
            "base_clusterings": sum(g.base["computed"] for g in groups),
            "consensus": consensus["computed"]}


def run_record(plan: Plan, run_id: str, store_url: str, groups: list[GroupOutcome],
               consensus: dict[str, Any], started: float, created: str,
               groups_seconds: float) -> dict[str, Any]:
    """The record of a run whose groups and consensus are done (labels not written yet).

    Parameters
    ----------
    plan : Plan
    run_id, store_url : str
    groups : list of GroupOutcome
        In group order.
    consensus : dict
        The consensus task's result.
    started : float
        ``time.time()`` when the run started; ``created`` the same as ISO 8601 (UTC).
    groups_seconds : float
        Time until every group was done.
    """
    params, data = plan.params, plan.data
    computed = sum(g.computed for g in groups)
    return {
        "run_id": run_id, "kind": plan.kind, "parent_run": plan.parent_run,
        "created": created, "started_unix": started, "store": store_url,
        "dataset": data["name"], "dataset_version": plan.dataset_version,
        "dataset_fingerprint": data["fingerprint"],
        "batches": [b["batch_id"] for b in data["batches"]],
        "anchor_batches": sorted(b["batch_id"] for b in plan.anchor_data["batches"]),
        "anchor_fingerprint": plan.anchor_data["fingerprint"],
        "n_samples": data["n_samples"], "n_views": data["n_views"],
        "n_clusters": params.n_clusters, "n_groups": params.n_groups,
        "params": params.to_dict(), "root_seed": params.root_seed,
        "groups_computed": computed, "groups_reused": params.n_groups - computed,
        "work": _work(groups, consensus),
        "groups": [g.entry() for g in groups],
        "consensus": consensus["consensus"],
        "timings": {"groups": round(groups_seconds, 3),
                    "consensus": round(time.time() - started - groups_seconds, 3)},
        "code_version": fastmice.CODE_VERSION,
        "fastmice_version": fastmice.__version__,
    }
