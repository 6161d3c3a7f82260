"""Tasks writing a run's results: the labels table, scores, the run record, Prefect artifacts."""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

import fastmice
from storage import labels_table, open_store
from storage.base import utc_now
from storage.datasets import DatasetStore
from tasks._prefect import TASK_OPTIONS
from tasks.keys import LABELS, RUN, labels_key

__all__ = ["SUMMARY_KEYS", "artifact_key", "report_run", "run_summary", "write_results"]

#: Keys of the run summary the flows return and ``fastmice --json`` prints.
SUMMARY_KEYS = ("run_id", "kind", "parent_run", "dataset", "n_samples", "n_views",
                "n_clusters", "n_groups", "groups_computed", "groups_reused", "work",
                "seconds", "labels_path", "scores", "store")


def run_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The summary of a run record (its keys in :data:`SUMMARY_KEYS`; scores only if known)."""
    summary = {k: record.get(k) for k in SUMMARY_KEYS}
    if summary["scores"] is None:
        del summary["scores"]
    return summary


def artifact_key(dataset: str, what: str) -> str:
    """A Prefect artifact key (lower-case letters, digits, dashes) for a dataset."""
    slug = re.sub(r"[^a-z0-9]+", "-", dataset.lower()).strip("-")[:60] or "data"
    return f"fastmice-{slug}-{what}"


def _ground_truth(datasets: DatasetStore, name: str, batch_ids: list[int]) -> np.ndarray | None:
    """Labels of the batches, or None unless every batch carries labels."""
    manifest = datasets.manifest(name)
    if any(manifest["batches"][b]["labels"] is None for b in batch_ids):
        return None
    return datasets.load_labels(name, batches=batch_ids)


@task(name="write-results", **TASK_OPTIONS)
def write_results(store_url: str, run: dict[str, Any], data: dict[str, Any],
                  consensus: dict[str, Any]) -> dict[str, Any]:
    """Labels table, scores (fastmice.metrics.clustering_scores) and the run record.

    Reads ``consensus`` and the dataset's ids and labels; writes ``labels`` (Parquet:
    ``sample_id``, ``label``) and the record ``run/<run_id>``.

    Parameters
    ----------
    store_url : str
    run : dict
        The run record so far (ids, parameters, group refs, counts, ``started_unix``).
    data : dict
        :func:`tasks.keys.dataset_ref` of the clustered batches.
    consensus : dict
        :func:`tasks.consensus.consensus`'s result.

    Returns
    -------
    record : dict
        The run record as written (with ``labels``, ``labels_path``, ``scores`` -- None
        without ground truth -- ``cluster_sizes`` and ``seconds``).
    """
    store = open_store(store_url)
    datasets = DatasetStore(store)
    batch_ids = [b["batch_id"] for b in data["batches"]]
    labels = np.asarray(store.get(consensus["consensus"])["labels"])
    table = labels_table(datasets.load_ids(data["name"], batches=batch_ids), {"label": labels},
                         {"run_id": run["run_id"], "dataset": data["name"],
                          "n_clusters": run["n_clusters"], "seed": run["params"]["random_state"],
                          "code_version": fastmice.CODE_VERSION})
    ref = store.put(LABELS, labels_key(consensus["consensus"]["key"], data), table)
    truth = _ground_truth(datasets, data["name"], batch_ids)
    scores = None if truth is None else fastmice.metrics.clustering_scores(truth, labels)
    path = store.local_path(ref)
    record = {
        **run,
        "consensus": consensus["consensus"],
        "labels": ref.to_dict(),
        "labels_path": str(path) if path is not None else f"{store.url}#{LABELS}/{ref.key}",
        "scores": scores,
        "cluster_sizes": np.bincount(labels, minlength=run["n_clusters"]).tolist(),
        "finished": utc_now(),
        "seconds": round(time.time() - run["started_unix"], 3),
    }
    store.write_record(RUN, run["run_id"], record)
    return record


@task(name="report-run", **TASK_OPTIONS)
def report_run(record: dict[str, Any]) -> None:
    """Prefect artifacts of a run: scores (when ground truth is known), cluster sizes, summary.

    Parameters
    ----------
    record : dict
        :func:`write_results`'s result.
    """
    dataset, run_id = record["dataset"], record["run_id"]
    if record["scores"] is not None:
        create_table_artifact(
            [{"metric": k, "value": round(v, 4)} for k, v in record["scores"].items()],
            key=artifact_key(dataset, "scores"), description=f"Scores of run {run_id}.")
    create_table_artifact(
        [{"cluster": c, "size": n} for c, n in enumerate(record["cluster_sizes"])],
        key=artifact_key(dataset, "cluster-sizes"), description=f"Cluster sizes of run {run_id}.")
    scores = "" if record["scores"] is None else " | ".join(
        f"{k} {v:.4f}" for k, v in record["scores"].items())
    create_markdown_artifact(
        f"## fastmice run `{run_id}` ({record['kind']})\n\n"
        f"* dataset `{dataset}`: {record['n_samples']} samples, {record['n_views']} views, "
        f"batches {record['batches']}\n"
        f"* k = {record['n_clusters']}, {record['n_groups']} view groups: "
        f"{record['groups_computed']} computed, {record['groups_reused']} reused\n"
        f"* work: {record['work']}\n"
        f"* {record['seconds']:.1f} s; labels in `{record['labels_path']}`\n"
        + (f"* scores: {scores}\n" if scores else ""),
        key=artifact_key(dataset, "summary"), description=f"Summary of run {run_id}.")
