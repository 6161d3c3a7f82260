"""A run whose result is already stored: found before any flow starts.

The same command on the same data, parameters and code computes nothing (every step is
reused); :func:`stored_run` finds the run that already computed it, so that the command can
answer from the store without importing Prefect or starting its API.

``cluster`` of input files unchanged since they were registered (:mod:`pipeline.sources`)
also keeps an *answer*: a small record, named by the files' stamp and the command's
parameters, saying which run answered it last (:func:`remember_answer`). The next such
command reads it and checks it against what it names, at once (:func:`recall_answer`: the
dataset's and the run's records as they are now, the labels table's checksum), so that on
an object store the stored answer costs a few round trips instead of one per record of the
store. An answer that no longer holds (a removed or rewritten run or dataset, a corrupt
record or labels table, another batch) answers nothing: the command takes the usual path.
``fastmice rm`` and ``gc`` remove the answers of the runs and datasets they remove.

:func:`stored_answer` and :func:`answer_unchanged_files` make the decision for a command
(:mod:`pipeline.commands`): the summary to print, with nothing computed, or None. When every
run must show in a Prefect server (``records_runs``: ``PREFECT_API_URL`` set), nothing is
answered from the store and the command runs its flow (every step reused).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

import fastmice
from pipeline.keys import RUN
from pipeline.params import ensemble_params
from pipeline.plans import Plan, cluster_plan, plan_cluster
from pipeline.results import labels_damage
from pipeline.runs import list_runs, run_summary
from pipeline.sources import recall_source
from storage import ArtifactIntegrityError, ArtifactNotFoundError, ArtifactRef, DatasetStore
from storage.datasets import RECORD_KIND
from storage.usage import remove_record

__all__ = ["ANSWER", "answer_name", "answer_unchanged_files", "forget_answers", "keep_answer",
           "recall_answer", "remember_answer", "stored_answer", "stored_run"]

#: Parameters that change no result.
_NO_RESULT = ("n_jobs",)
#: The record kind of an answer.
ANSWER = "answer"
_ANSWER_VERSION = 1
_STORE_ERRORS = (ArtifactNotFoundError, ArtifactIntegrityError, OSError, KeyError, TypeError,
                 ValueError)


def _result_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in _NO_RESULT}


def _computes(record: dict[str, Any], plan: Plan) -> bool:
    """Whether run ``record`` computed exactly ``plan`` (its labels not checked)."""
    return (record.get("kind") == plan.kind and record.get("parent_run") == plan.parent_run
            and record.get("dataset_fingerprint") == plan.data["fingerprint"]
            and record.get("anchor_fingerprint") == plan.anchor_data["fingerprint"]
            and record.get("code_version") == fastmice.CODE_VERSION
            and record.get("warm_start") is None and bool(record.get("labels"))
            and _result_params(record.get("params") or {})
            == _result_params(plan.params.to_dict()))


def stored_run(store: Any, plan: Plan) -> dict[str, Any] | None:
    """The newest run record that computed exactly ``plan`` (same kind, parent run, batches
    and their content, anchor batches, parameters and ``fastmice.CODE_VERSION``, no warm
    start) and whose labels table is intact; None if there is none.

    Parameters
    ----------
    store : store
    plan : Plan
        From :func:`pipeline.plans.plan_cluster` or :func:`~pipeline.plans.plan_extend`.
    """
    if plan.warm_start is not None:
        return None
    for record in reversed(list_runs(store, plan.dataset)):
        if _computes(record, plan) and labels_damage(store, record) is None:
            return record
    return None


def answer_name(stamp: str, values: dict[str, Any]) -> str:
    """The record name of the answer to ``cluster`` of the files of ``stamp``
    (:func:`pipeline.sources.source_stamp`, which names the dataset) with the command's
    ensemble parameters ``values`` as given (``None``: not given)."""
    text = json.dumps([_ANSWER_VERSION, stamp, _result_params(values), fastmice.CODE_VERSION],
                      sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def remember_answer(store: Any, name: str, run_id: str, values: dict[str, Any]) -> None:
    """Keep that run ``run_id`` answers ``name`` (:func:`answer_name`), ``values`` being the
    parameters its plan was made with (completed from the data: k, the metrics ``"auto"``
    chose). Best effort: a store that cannot take it only loses the shortcut. Nothing is
    written if the same answer is kept already; another one is replaced."""
    with contextlib.suppress(*_STORE_ERRORS):
        record = store.read_record(RUN, run_id)
        run_versions, manifest, labels_meta = store.concurrently(
            lambda: store.record_versions(RUN, run_id),
            lambda: DatasetStore(store).manifest(record["dataset"]),
            lambda: store.read_meta(ArtifactRef.from_dict(record["labels"])))
        batches = manifest["batches"]
        if len(batches) != 1 or not _computes(record, cluster_plan(manifest, **values)):
            return
        answer = {"run_id": run_id, "run_version": run_versions[-1],
                  "dataset": manifest["name"], "dataset_version": manifest["version"],
                  "fingerprint": batches[0]["fingerprint"],
                  "labels": [record["labels"]["kind"], record["labels"]["key"],
                             labels_meta["format"], int(labels_meta["size"])],
                  "values": _result_params(values)}
        with contextlib.suppress(*_STORE_ERRORS):
            if store.read_record(ANSWER, name, version=1) == json.loads(json.dumps(answer)):
                return
        remove_record(store, ANSWER, name)  # always version 1: read without a listing
        store.write_record(ANSWER, name, answer)


def recall_answer(store: Any, name: str) -> dict[str, Any] | None:
    """The run record that answers ``name`` (:func:`remember_answer`), if the answer still
    holds; else None.

    It holds if the run's and the dataset's records are still at the versions it names (the
    latest: each listed) and valid, the dataset still holds exactly the one batch the files
    were registered as, the run computed exactly the plan of the kept parameters on that
    dataset (:func:`stored_run`'s test) and its labels table is intact (checksummed; a
    corrupt one is set aside). These reads are made at once (``store.concurrently``; the
    table's ``meta.json`` with its data file): on an object store, the answer costs the
    answer's read and one round trip.
    """
    try:
        answer = store.read_record(ANSWER, name, version=1)
        run_id, dataset = answer["run_id"], answer["dataset"]
        labels = {"kind": answer["labels"][0], "key": answer["labels"][1]}
        # The format and size the table was written with: its meta.json and data file are
        # then read at once (answers kept before they were recorded check one after the other).
        expected = tuple(answer["labels"][2:4]) or None
        run_versions, record, dataset_versions, manifest, damage = store.concurrently(
            lambda: store.record_versions(RUN, run_id),
            lambda: store.read_record(RUN, run_id, version=answer["run_version"]),
            lambda: store.record_versions(RECORD_KIND, dataset),
            lambda: store.read_record(RECORD_KIND, dataset, version=answer["dataset_version"]),
            lambda: labels_damage(store, {"labels": labels}, expected=expected))
        manifest["version"] = answer["dataset_version"]
        batches = manifest["batches"]
        holds = (run_versions[-1:] == [answer["run_version"]]
                 and dataset_versions[-1:] == [answer["dataset_version"]]
                 and len(batches) == 1 and batches[0]["fingerprint"] == answer["fingerprint"]
                 and damage is None
                 and {k: record["labels"][k] for k in ("kind", "key")} == labels
                 and _computes(record, cluster_plan(manifest, **answer["values"])))
    except _STORE_ERRORS:
        return None
    return record if holds else None


def forget_answers(store: Any, runs: set[str] | None = None,
                   keep_runs: set[str] | None = None) -> int:
    """Remove the answers naming a run in ``runs``, or not in ``keep_runs``; how many."""
    removed = 0
    for name in store.list_records(ANSWER):
        with contextlib.suppress(*_STORE_ERRORS):
            run_id = store.read_record(ANSWER, name).get("run_id")
            if (runs is not None and run_id in runs) or (keep_runs is not None
                                                        and run_id not in keep_runs):
                removed += remove_record(store, ANSWER, name)
    return removed


def stored_answer(store: Any, plan: Plan, records_runs: bool = False) -> dict[str, Any] | None:
    """The summary to print if ``plan``'s result is stored (:func:`stored_run`), unless
    ``records_runs`` (every run must be a flow run that a Prefect server records)."""
    if records_runs:
        return None
    record = stored_run(store, plan)
    return None if record is None else _answered(record)


def _answered(record: dict[str, Any]) -> dict[str, Any]:
    """The summary of a stored answer from run ``record``."""
    summary = run_summary(record)
    summary.update(groups_computed=0, groups_reused=record["n_groups"], work={},
                   group_work={"reused": record["n_groups"]}, consensus_work="reused",
                   seconds=0.0, stages={}, answered_from_store=True)
    return summary


def answer_unchanged_files(store: Any, stamp: str | None, dataset: str,
                           values: dict[str, Any],
                           records_runs: bool = False) -> dict[str, Any] | None:
    """The stored answer to ``cluster`` of files unchanged since they were registered as
    ``dataset`` (:mod:`pipeline.sources`), found without reading them; else None.

    ``values`` are the command's ensemble parameters (``None``: not given), completed as
    the usual path completes them from the data: k from the labels' classes, ``"auto"``
    metrics by the rule's choice for each view. The answer the same command kept
    (:func:`recall_answer`) is tried first; an answer found otherwise is kept for the next
    time. None whenever ``records_runs`` (:func:`stored_answer`).
    """
    if stamp is None or records_runs:
        return None
    name = answer_name(stamp, values)
    record = recall_answer(store, name)
    if record is not None:
        return _answered(record)
    source = recall_source(store, stamp, dataset)
    if source is None:
        return None
    values = dict(values)
    if values["n_clusters"] is None:
        values["n_clusters"] = source["n_classes"] or "auto"
    try:
        params = ensemble_params(source["n_samples"], source["n_views"], **values)
    except ValueError:
        return None  # the usual path says what is wrong
    given = [params.metric] * source["n_views"] if isinstance(params.metric, str) \
        else list(params.metric)
    # "auto" chooses by the mode (the best mode's histograms): choices kept in another mode
    # (or before the source recorded its mode, when only the paper's rule existed) are not
    # this command's.
    kept = source["auto_metrics"] if source.get("auto_mode", "paper") == params.mode \
        else [None] * source["n_views"]
    metrics = [auto if m == "auto" else m for m, auto in zip(given, kept, strict=True)]
    if None in metrics:
        return None  # "auto" for a view whose choice was not kept: read the data
    values["metric"] = metrics
    summary = stored_answer(store, plan_cluster(store, dataset, **values))
    if summary is not None:
        remember_answer(store, name, summary["run_id"], values)
    return summary


def keep_answer(store: Any, stamp: str | None, given: dict[str, Any], run_id: str,
                values: dict[str, Any]) -> None:
    """Keep run ``run_id`` as the answer to ``cluster`` of the files of ``stamp`` with the
    ensemble parameters ``given`` (as given), its plan made with ``values``
    (:func:`remember_answer`); nothing if the files have no stamp."""
    if stamp is not None:
        remember_answer(store, answer_name(stamp, given), run_id, values)
