"""Run records as stored: their ids, reading and listing them, and their summaries.

A run record (``store.write_record("run", run_id, record)``, built by
:mod:`pipeline.results`) holds the plan (dataset, batches, the whole parameter object under
``params`` and the derived ``root_seed``), every view group's artifact refs, what was computed
and what was reused, the labels and scores. :func:`run_summary` is the part the flows return
and ``fastmice --json`` prints.
"""

from __future__ import annotations

import datetime as _dt
import secrets
from typing import Any

from pipeline.keys import RUN
from storage import ArtifactIntegrityError, ArtifactNotFoundError, validate_name

__all__ = ["SUMMARY_KEYS", "list_runs", "new_run_id", "read_run", "run_summary"]

#: Keys of the run summary the flows return and ``fastmice --json`` prints.
SUMMARY_KEYS = ("run_id", "kind", "parent_run", "dataset", "n_samples", "n_views",
                "n_clusters", "n_groups", "groups_computed", "groups_reused", "group_work",
                "consensus_work", "work",
                "seconds", "timings", "stages", "labels_path", "scores", "relabel", "store",
                "k_candidates", "k_rule")


def read_run(store: Any, run_id: str) -> dict[str, Any]:
    """The record of run ``run_id``.

    Raises
    ------
    ArtifactNotFoundError
        If there is no such run (the message says how to list them).
    ArtifactIntegrityError
        If its record is corrupt (it has been set aside in quarantine, and the run is no
        longer listed).
    """
    validate_name(run_id, "run id")
    try:
        return store.read_record(RUN, run_id)
    except ArtifactNotFoundError:
        raise ArtifactNotFoundError(f"Unknown run {run_id!r} in store {store.url}; "
                                    f"`fastmice runs` lists the runs.") from None


def list_runs(store: Any, dataset: str | None = None) -> list[dict[str, Any]]:
    """Records of every run (of ``dataset`` only, if given), oldest first.

    A corrupt run record hides only that run: the store sets it aside in quarantine and
    reports it (on the ``storage`` logger), and the other runs are listed.
    """
    runs = []
    for name in store.list_records(RUN):
        try:
            runs.append(store.read_record(RUN, name))
        except (ArtifactIntegrityError, ArtifactNotFoundError):
            continue  # quarantined (and reported), or removed meanwhile
    if dataset is not None:
        runs = [r for r in runs if r.get("dataset") == dataset]
    return sorted(runs, key=lambda r: str(r.get("created", "")))


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
    for key in ("scores", "k_candidates", "k_rule"):
        if summary[key] is None:
            del summary[key]
    return summary
