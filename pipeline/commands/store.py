"""``append``, ``runs``, ``show`` and ``fsck``: each command is one call of this module (no
Prefect), which returns what the command prints.

A run whose labels table was lost is mended on the way (:func:`readable_run`, for ``show``
and ``report``; ``fsck`` for every run): rebuilt from its stored consensus and said on the
``storage`` logger, or refused in one line when the consensus is gone too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pipeline.commands.errors import RequestError
from pipeline.ingest import read_samples, register_batch
from pipeline.keys import RUN
from pipeline.results import labels_damage, rebuild_labels
from pipeline.runs import list_runs, read_run, run_summary
from storage import DatasetStore, open_store, validate_name
from storage.fsck import FsckReport, check_store

__all__ = ["append", "fsck", "readable_run", "runs", "show"]


def append(store_url: str, dataset: str, data: Sequence[str],
           id_column: str | None = None) -> dict[str, Any]:
    """Store ``data`` as the next batch of ``dataset``: what was appended (``appended``:
    False if these samples were stored already), the batch and the dataset's new size."""
    store = open_store(store_url)
    validate_name(dataset, "dataset name")
    if not DatasetStore(store).exists(dataset):
        raise RequestError(f"Unknown dataset {dataset!r} in store {store.url}; create it "
                           f"with `fastmice cluster DATA --name {dataset}`.")
    Xs, labels, ids = read_samples(data, id_column=id_column)
    manifest, written = register_batch(store, dataset, Xs, labels, mode="append", ids=ids)
    batch = manifest["batches"][-1]
    return {"dataset": dataset, "appended": written, "batch_id": batch["batch_id"],
            "n_new_samples": int(Xs[0].shape[0]), "n_batches": len(manifest["batches"]),
            "n_samples": manifest["n_samples"], "fingerprint": manifest["fingerprint"],
            "store": store.url}


def runs(store_url: str, dataset: str | None = None) -> dict[str, Any]:
    """The store's runs (``dataset``'s only, if given), oldest first: each one's summary
    with its ``created`` time."""
    store = open_store(store_url)
    return {"store": store.url,
            "runs": [{**run_summary(r), "created": r["created"]}
                     for r in list_runs(store, dataset)]}


def readable_run(store: Any, run_id: str, detailed: bool = False) -> dict[str, Any]:
    """Run ``run_id``'s record, its labels table rebuilt from the stored consensus if it is
    missing or corrupt (said on the ``storage`` logger); ``detailed``: the messages name the
    table and the kind of damage (``show``), else only the damage (``report``).

    Raises
    ------
    RequestError
        If the table is lost and its consensus too.
    """
    record = read_run(store, run_id)
    reason = labels_damage(store, record) if record.get("labels") else None
    if reason is None:
        return record
    missing = reason == "missing"
    where = f" ({record['labels_path']})" if detailed else ""
    if not rebuild_labels(store, record):
        damage = reason if not detailed or missing else f"corrupt: {reason}"
        raise RequestError(f"The labels of run {run_id}{where} are {damage} and cannot be "
                           f"rebuilt (its consensus is gone too); rerun the command that made "
                           f"the run to recompute them.")
    was = reason if not detailed or missing else f"corrupt ({reason})"
    logging.getLogger("storage").warning(
        f"The labels of run {run_id} were {was}; rebuilt from the stored consensus{where}.")
    return record


def show(store_url: str, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``run_id``'s whole record (:func:`readable_run`) and its summary
    (:func:`pipeline.runs.run_summary`)."""
    record = readable_run(open_store(store_url), run_id, detailed=True)
    return record, run_summary(record)


def fsck(store_url: str, repair: bool = False) -> FsckReport:
    """Verify every checksum and reference of the store and every run's labels table (with
    ``repair``: set corrupt files aside, rebuild lost tables, remove old leftovers)."""
    store = open_store(store_url)
    report = check_store(store, repair=repair)
    found = [r for (kind, _), r in sorted(report.records.items()) if kind == RUN]
    for record in found:
        if record.get("labels") is None or labels_damage(
                store, record, quarantine=repair) is None:
            continue
        if not repair:
            done, left = "fsck --repair rebuilds it from the stored consensus", True
        elif rebuild_labels(store, record):
            done, left = "rebuilt from the stored consensus", False
        else:
            done, left = "cannot be rebuilt (its consensus is gone): rerun its command", True
        report.add("lost-labels", f"run {record['run_id']}", "labels table missing or corrupt",
                   done, left)
    return report
