"""A run's results: what its groups did, its record, the labels table and the scores.

:func:`run_record` writes down a run whose groups and consensus are done; :func:`finish_run`
adds the labels table and the scores and stores the record; :func:`export_labels` copies the
labels to a file; :func:`labels_damage` and :func:`rebuild_labels` find and mend a run's
missing or corrupt labels table (from its consensus).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import fastmice
from pipeline.keys import LABELS, RUN, dataset_ref, labels_key
from pipeline.plans import Plan
from pipeline.progress import GROUP_WORK
from pipeline.relabel import apply_mapping, relabelling
from pipeline.runs import read_run
from storage import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    DatasetStore,
    labels_from_table,
    labels_table,
    utc_now,
    write_file_atomic,
)

__all__ = ["GroupOutcome", "export_labels", "finish_run", "labels_damage", "rebuild_labels",
           "run_record"]


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

    @property
    def work(self) -> str:
        """What the group took (:data:`pipeline.progress.GROUP_WORK`): its graph ``built``,
        its base clustering ``extended`` to new samples (warm) or ``reclustered`` anew on
        stored graph rows, or everything ``reused``."""
        if self.graph["computed"]:
            return "built"
        if not self.computed:
            return "reused"
        return "extended" if self.base.get("warm") and self.base["computed"] else "reclustered"

    def entry(self) -> dict[str, Any]:
        """The group's entry in the run record."""
        rows = {**self.graph["rows"], **{str(r["batch_id"]): r["rows"] for r in self.rows}}
        return {"group": self.graph["group"], "anchors": self.graph["anchors"], "rows": rows,
                "labels": self.base["labels"], "partition": self.base["partition"],
                "computed": self.computed}


def _stages(groups: list[GroupOutcome], consensus: dict[str, Any]) -> dict[str, float]:
    """Seconds per stage, summed over every task of the run (thread-seconds)."""
    total: dict[str, float] = {}
    for result in [*(t for g in groups for t in (g.graph, *g.rows, g.base)), consensus]:
        for stage, seconds in result.get("seconds", {}).items():
            total[stage] = total.get(stage, 0.0) + seconds
    return {stage: round(seconds, 3) for stage, seconds in sorted(total.items())}


def _work(groups: list[GroupOutcome], consensus: dict[str, Any]) -> dict[str, Any]:
    rows = [r["computed"] for g in groups for r in g.rows]
    return {"graphs_built": sum(g.graph["computed"] for g in groups),
            "row_batches_computed": sum(rows),
            "row_batches_reused": len(rows) - sum(rows),
            "base_clusterings": sum(g.base["computed"] for g in groups),
            "consensus": consensus["computed"]}


def _group_work(groups: list[GroupOutcome]) -> dict[str, int]:
    counts = dict.fromkeys(GROUP_WORK, 0)
    for group in groups:
        counts[group.work] += 1
    return counts


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
        "warm_start": plan.warm_start,
        "groups_computed": computed, "groups_reused": params.n_groups - computed,
        "work": _work(groups, consensus),
        "group_work": _group_work(groups),
        "consensus_work": ("reused" if not consensus["computed"] else
                           "refined" if plan.warm_start else "computed"),
        "groups": [g.entry() for g in groups],
        "consensus": consensus["consensus"],
        "timings": {"groups": round(groups_seconds, 3),
                    "consensus": round(time.time() - started - groups_seconds, 3)},
        "stages": _stages(groups, consensus),
        "code_version": fastmice.CODE_VERSION,
        "fastmice_version": fastmice.__version__,
    }


def _ground_truth(datasets: DatasetStore, name: str, batch_ids: list[int]) -> np.ndarray | None:
    """Labels of the batches, or None unless every batch carries labels."""
    manifest = datasets.manifest(name)
    if any(manifest["batches"][b]["labels"] is None for b in batch_ids):
        return None
    return datasets.load_labels(name, batches=batch_ids)


def _parent_labels(store: Any, run_id: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(sample ids, labels)`` of run ``run_id`` (its labels table rebuilt if it must be),
    or None if they cannot be read (the run was removed meanwhile, say)."""
    try:
        parent = read_run(store, run_id)
        if labels_damage(store, parent) is not None:
            rebuild_labels(store, parent)
        ids, columns, _ = labels_from_table(store.get(parent["labels"]))
    except (ArtifactNotFoundError, ArtifactIntegrityError, KeyError, TypeError) as exc:
        logging.getLogger("storage").warning(
            "The labels of run %s cannot be read (%s); the cluster ids of this run are not "
            "matched to its.", run_id, " ".join(str(exc).split()))
        return None
    return ids, columns["label"]


def _k_of(consensus: Any) -> dict[str, Any]:
    """When the consensus chose k (``n_clusters="auto"``): the run's ``n_clusters`` and its
    ``k_candidates`` (``[[k, score], ...]``, best first) and ``k_rule`` (what the score
    is, in words; absent for a consensus stored without it); else nothing."""
    if "k_chosen" not in consensus:
        return {}
    choice = fastmice.ConsensusPartition.from_arrays(consensus).k_choice
    rule = {} if choice.rule is None else {"k_rule": choice.rule}
    return {"n_clusters": choice.n_clusters,
            "k_candidates": [list(pair) for pair in choice.ranked()], **rule}


def _store_labels(store: Any, record: dict[str, Any], data: dict[str, Any], *,
                  rebuild: bool = False) -> tuple[Any, np.ndarray, float, dict | None]:
    """Write the labels table of a run whose consensus is stored; ``(ref, labels, seconds
    spent writing, relabel)``.

    The consensus's cluster ids are renamed to match the parent run's labels
    (:func:`pipeline.relabel.relabelling`; a rebuild uses the record's ``relabel``)."""
    batch_ids = [b["batch_id"] for b in data["batches"]]
    consensus = store.get(record["consensus"])
    record.update(_k_of(consensus))
    labels = np.asarray(consensus["labels"])
    ids = DatasetStore(store).load_ids(data["name"], batches=batch_ids)
    relabel = record.get("relabel")
    if not rebuild and record.get("parent_run"):
        parent = _parent_labels(store, record["parent_run"])
        relabel = None if parent is None else relabelling(*parent, ids, labels,
                                                          record["parent_run"])
    mapping = None if relabel is None else relabel["mapping"]
    if mapping is not None:
        labels = apply_mapping(labels, dict(map(tuple, mapping)))
    metadata = {"run_id": record["run_id"], "dataset": data["name"],
                "n_clusters": record["n_clusters"],
                "random_state": record["params"]["random_state"],
                "root_seed": record["root_seed"], "code_version": fastmice.CODE_VERSION}
    table = labels_table(ids, {"label": labels}, metadata)
    with fastmice.record_stages(this_thread=True) as seconds, fastmice.stage("write"):
        ref = store.put(LABELS, labels_key(record["consensus"]["key"], data, mapping), table)
    return ref, labels, seconds["write"], relabel


def finish_run(store: Any, record: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """Write the labels table and the run record of a run whose consensus is stored.

    Reads the consensus (``record["consensus"]``: the run's k, chosen there with
    ``n_clusters="auto"``), the dataset's ids and labels and, for a run with a
    ``parent_run``, that run's labels, to which its cluster ids are matched
    (:mod:`pipeline.relabel`); writes ``labels`` (Parquet: ``sample_id``, ``label``, with
    the run id, ``random_state`` and ``root_seed`` in its metadata) and the record
    ``run/<run_id>``.

    Parameters
    ----------
    store : store
    record : dict
        :func:`pipeline.results.run_record`.
    data : dict
        :func:`pipeline.keys.dataset_ref` of the clustered batches.

    Returns
    -------
    record : dict
        The run record as written: with ``labels`` (ref), ``relabel`` (the renaming of
        the consensus's cluster ids, :func:`pipeline.relabel.relabelling`, or None),
        ``labels_path``, ``scores``
        (:func:`fastmice.metrics.clustering_scores`; None without ground truth),
        ``cluster_sizes``, ``finished`` and ``seconds``.
    """
    ref, labels, write_seconds, relabel = _store_labels(store, record, data)
    stages = dict(record.get("stages", {}))
    stages["write"] = round(stages.get("write", 0.0) + write_seconds, 3)
    truth = _ground_truth(DatasetStore(store), data["name"],
                          [b["batch_id"] for b in data["batches"]])
    path = store.local_path(ref)
    record = {
        **record,
        "labels": ref.to_dict(),
        "relabel": relabel,
        "labels_path": str(path) if path is not None else f"{store.url}#{LABELS}/{ref.key}",
        "scores": None if truth is None else fastmice.metrics.clustering_scores(truth, labels),
        "cluster_sizes": np.bincount(labels, minlength=record["n_clusters"]).tolist(),
        "stages": stages,
        "finished": utc_now(),
        "seconds": round(time.time() - record["started_unix"], 3),
    }
    store.write_record(RUN, record["run_id"], record)
    return record


def labels_damage(store: Any, record: dict[str, Any], *, quarantine: bool = True,
                  expected: tuple[str, int] | None = None) -> str | None:
    """Why a run's labels table cannot be read (``"missing"``, ``"sha256 mismatch..."``), or
    None. A corrupt table is set aside in quarantine, as by any read (unless told not to).
    ``expected``: the table's ``(format, size)`` when written (see ``verify``)."""
    ref = record["labels"]
    try:
        return store.verify(ref["kind"], ref["key"], quarantine=quarantine, expected=expected)
    except ArtifactNotFoundError:
        return "missing"


def rebuild_labels(store: Any, record: dict[str, Any]) -> bool:
    """Store again a run's missing labels table, from its stored consensus; whether it could.

    It cannot when the consensus is gone too (rerun the command that made the run: it
    recomputes what is missing) or when the run's batches no longer match its dataset.
    """
    if not store.exists(record["consensus"]["kind"], record["consensus"]["key"]):
        return False
    try:
        data = dataset_ref(DatasetStore(store).manifest(record["dataset"]), record["batches"])
    except (ArtifactNotFoundError, ValueError):
        return False
    relabel = record.get("relabel")
    mapping = None if relabel is None else relabel["mapping"]
    if labels_key(record["consensus"]["key"], data, mapping) != record["labels"]["key"]:
        return False
    _store_labels(store, record, data, rebuild=True)
    return True


def export_labels(store: Any, run_id: str, path: str | os.PathLike[str]) -> Path:
    """Write run ``run_id``'s labels table (``sample_id``, ``label``) to a ``.parquet`` or
    ``.csv`` file, atomically (:func:`storage.write_file_atomic`); return its absolute path."""
    out = Path(path)
    table = store.get(read_run(store, run_id)["labels"])
    if out.suffix.lower() == ".csv":
        import pyarrow.csv as pacsv

        write_file_atomic(out, lambda f: pacsv.write_csv(table.replace_schema_metadata(None), f))
    else:
        import pyarrow.parquet as pq

        write_file_atomic(out, lambda f: pq.write_table(table, f))
    return out.absolute()
