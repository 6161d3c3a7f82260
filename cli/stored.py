"""Answer a command whose every step is stored from the store, without Prefect.

Used by ``cluster`` and ``extend`` before any flow starts: if a run already computed exactly
this (:func:`pipeline.stored.stored_run`), its summary is the answer, with nothing computed,
and neither Prefect nor its API is started (seconds, not tens of seconds). When a Prefect
server is set (``PREFECT_API_URL``), the command runs its flow as before, so that every run
shows in that server's UI.
"""

from __future__ import annotations

from typing import Any

from cli.prefect_home import api_configured
from pipeline.params import ensemble_params
from pipeline.plans import Plan, plan_cluster
from pipeline.runs import run_summary
from pipeline.sources import recall_source
from pipeline.stored import answer_name, recall_answer, remember_answer, stored_run

__all__ = ["answer_unchanged_files", "keep_answer", "stored_answer", "stored_note"]


def stored_answer(store: Any, plan: Plan) -> dict[str, Any] | None:
    """The summary to print if ``plan``'s result is stored and no Prefect server is set."""
    if api_configured():
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
                           values: dict[str, Any]) -> dict[str, Any] | None:
    """The stored answer to ``cluster`` of files unchanged since they were registered as
    ``dataset`` (:mod:`pipeline.sources`), found without reading them; else None.

    ``values`` are the command's ensemble parameters (``None``: not given), completed as
    the usual path completes them from the data: k from the labels' classes, ``"auto"``
    metrics by the rule's choice for each view. The answer the same command kept
    (:func:`pipeline.stored.recall_answer`) is tried first; an answer found otherwise is kept
    for the next time.
    """
    if stamp is None or api_configured():
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
    (:func:`pipeline.stored.remember_answer`); nothing if the files have no stamp."""
    if stamp is not None:
        remember_answer(store, answer_name(stamp, given), run_id, values)


def stored_note(summary: dict[str, Any]) -> str:
    """The line the human-readable output adds to a stored answer."""
    return (f"stored     every step of run {summary['run_id']} is stored: answered from the "
            f"store, no flow run (set PREFECT_API_URL to record runs in a Prefect server)\n")
