"""A run's results: the labels table, the scores, the finished run record, and exports."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

import fastmice
from pipeline.keys import LABELS, RUN, labels_key
from pipeline.runs import read_run
from storage import DatasetStore, labels_table, utc_now, write_file_atomic

__all__ = ["export_labels", "finish_run"]


def _ground_truth(datasets: DatasetStore, name: str, batch_ids: list[int]) -> np.ndarray | None:
    """Labels of the batches, or None unless every batch carries labels."""
    manifest = datasets.manifest(name)
    if any(manifest["batches"][b]["labels"] is None for b in batch_ids):
        return None
    return datasets.load_labels(name, batches=batch_ids)


def finish_run(store: Any, record: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """Write the labels table and the run record of a run whose consensus is stored.

    Reads the consensus (``record["consensus"]``) and the dataset's ids and labels; writes
    ``labels`` (Parquet: ``sample_id``, ``label``, with the run id, ``random_state`` and
    ``root_seed`` in its metadata) and the record ``run/<run_id>``.

    Parameters
    ----------
    store : store
    record : dict
        :func:`pipeline.runs.run_record`.
    data : dict
        :func:`pipeline.keys.dataset_ref` of the clustered batches.

    Returns
    -------
    record : dict
        The run record as written: with ``labels`` (ref), ``labels_path``, ``scores``
        (:func:`fastmice.metrics.clustering_scores`; None without ground truth),
        ``cluster_sizes``, ``finished`` and ``seconds``.
    """
    datasets = DatasetStore(store)
    batch_ids = [b["batch_id"] for b in data["batches"]]
    labels = np.asarray(store.get(record["consensus"])["labels"])
    metadata = {"run_id": record["run_id"], "dataset": data["name"],
                "n_clusters": record["n_clusters"],
                "random_state": record["params"]["random_state"],
                "root_seed": record["root_seed"], "code_version": fastmice.CODE_VERSION}
    table = labels_table(datasets.load_ids(data["name"], batches=batch_ids), {"label": labels},
                         metadata)
    ref = store.put(LABELS, labels_key(record["consensus"]["key"], data), table)
    truth = _ground_truth(datasets, data["name"], batch_ids)
    path = store.local_path(ref)
    record = {
        **record,
        "labels": ref.to_dict(),
        "labels_path": str(path) if path is not None else f"{store.url}#{LABELS}/{ref.key}",
        "scores": None if truth is None else fastmice.metrics.clustering_scores(truth, labels),
        "cluster_sizes": np.bincount(labels, minlength=record["n_clusters"]).tolist(),
        "finished": utc_now(),
        "seconds": round(time.time() - record["started_unix"], 3),
    }
    store.write_record(RUN, record["run_id"], record)
    return record


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
