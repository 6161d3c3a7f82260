"""``cluster``, ``extend`` and ``recluster``: each command is one call of this module.

Each function decides everything the command must do, in order, with nothing written until
every input is checked: the answer already stored (:mod:`pipeline.stored`), the memory the
run needs (:mod:`pipeline.resources`), the registration of the data
(:mod:`pipeline.ingest`) and the plan (:mod:`pipeline.plans`, the flows' own); then, unless a
stored run answers, it has the caller's ``runner`` run the flow and returns the run's
summary (:func:`pipeline.runs.run_summary`), its labels copied to ``out`` if asked.

The runner (:class:`FlowRunner`) is the orchestration's side, passed in: the command line's
runs the flow in this process through Prefect (:class:`processes.engine.FlowRunner`); this
module never imports Prefect.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pipeline.commands.errors import ParameterError, RequestError, checked_out_file
from pipeline.ingest import default_dataset_name, read_samples, register_batch
from pipeline.ingest.read import DatasetExistsError
from pipeline.params import ensemble_params, resolved_metrics
from pipeline.plans import Plan, plan_cluster, plan_extend, plan_recluster
from pipeline.resources import fewer_groups_that_fit, parse_size
from pipeline.results import export_labels
from pipeline.runs import new_run_id
from pipeline.sources import remember_source, source_stamp
from pipeline.stored import answer_unchanged_files, keep_answer, stored_answer
from storage import DatasetStore, open_store, validate_name

__all__ = ["FlowRunner", "cluster", "extend", "recluster"]

#: Says one stage the command does itself (``ingest``): ``stage(name, text)``.
StageLine = Callable[[str, str], None]


class FlowRunner(Protocol):
    """What runs the pipeline's flows for a command."""

    #: Whether every run must be a flow run (a Prefect server records them): then nothing is
    #: answered from the store.
    records_runs: bool

    def check(self) -> None:
        """Fail now, before anything is written, if the flow could not run."""

    def start(self) -> None:
        """Start what the flow will need (its API server), in the background."""

    def run(self, flow_name: str, n_jobs: int | None, **parameters: Any) -> dict[str, Any]:
        """Run flow ``flow_name`` of :mod:`flows.pipeline`; its summary."""


def _checked(check: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``check(...)``, a wrong parameter raised as :class:`ParameterError`."""
    try:
        return check(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        raise ParameterError(str(exc)) from None


def _out_path(path: str | None) -> Path | None:
    """``out`` checked before anything is computed: a .parquet or .csv file in a folder."""
    return None if path is None else checked_out_file(Path(path), (".parquet", ".csv"),
                                                      "a .parquet or .csv file name", path)


def _fits(memory_limit: str | None, params: Any, n_samples: int, n_features: Sequence[int],
          itemsize: int = 8) -> int | None:
    """Refuse a run that would not fit in memory (before anything is written), even with one
    view group at a time; the fewer groups at once it fits with (None: as many as
    ``params.n_jobs`` asks): :func:`pipeline.resources.fewer_groups_that_fit`."""
    limit = None if memory_limit is None else _checked(parse_size, memory_limit)
    return fewer_groups_that_fit(params, n_samples, list(n_features), itemsize=itemsize,
                                 limit=limit)


def _finish(store: Any, summary: dict[str, Any], out: Path | None) -> dict[str, Any]:
    """Copy the labels to ``out`` (``labels_path`` then points there)."""
    if out is not None:
        summary["labels_path"] = str(export_labels(store, summary["run_id"], out))
    return summary


def cluster(store_url: str, data: Sequence[str], values: dict[str, Any], runner: FlowRunner, *,
            name: str | None = None, id_column: str | None = None,
            run_name: str | None = None, memory_limit: str | None = None,
            out: str | None = None, stage: StageLine = lambda name, text: None,
            reach_store: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Register ``data`` as a dataset and cluster it with a new ensemble: the run's summary.

    Parameters
    ----------
    store_url : str
    data : sequence of str
        The data files (:func:`pipeline.ingest.read_samples`).
    values : dict
        The ensemble parameters as given (``None``: not given; ``n_jobs`` included).
    runner : FlowRunner
    name, id_column, run_name : str, optional
        The dataset's name (default: from the files), the column of sample ids, the run's id.
    memory_limit : str, optional
        The most memory the run may use (``"8G"``; default: the memory free now).
    out : str, optional
        Also write the labels there (.parquet or .csv).
    stage : callable, optional
        Told the ``ingest`` stage in one line.
    reach_store : callable, optional
        Checks that the store answers; called only if no stored answer is found first.

    Returns
    -------
    dict
        The run's summary, with ``dataset_registered`` (and ``answered_from_store`` when a
        stored run answered, nothing computed).
    """
    out_path = _out_path(out)
    store = open_store(store_url)
    name = name if name is not None else default_dataset_name(data)
    validate_name(name, "dataset name (--name)")
    given, values = values, dict(values)

    def refuse_early(n_samples: int, n_features: list[int], itemsize: int) -> None:
        # Files on disk: a run that would not fit is refused before their values are read.
        if values["n_clusters"] is not None:
            params = _checked(ensemble_params, n_samples, len(n_features), **values)
            _fits(memory_limit, params, n_samples, n_features, itemsize)

    runner.check()
    stamp = source_stamp(data, name, id_column)
    quick = None if run_name else _unchanged_files_answer(store, stamp, name, values, runner,
                                                          stage, reach_store)
    if quick is not None:
        return _finish(store, quick, out_path)
    reach_store()
    Xs, labels, ids = read_samples(data, id_column=id_column, on_shapes=refuse_early)
    if values["n_clusters"] is None:  # the classes of the labels, else chosen from the data
        values["n_clusters"] = "auto" if labels is None else len(set(labels.tolist()))
    params = _checked(ensemble_params, Xs[0].shape[0], len(Xs), **values)
    values["metric"] = resolved_metrics(params, Xs)  # "auto": the choice, in the record
    chosen = [params.metric] * len(Xs) if isinstance(params.metric, str) else params.metric
    auto_metrics = [m if g == "auto" else None for g, m in zip(chosen, values["metric"],
                                                                strict=True)]
    fewer = _fits(memory_limit, params, Xs[0].shape[0], [X.shape[1] for X in Xs],
                  max(X.dtype.itemsize for X in Xs))
    if run_name is not None:
        new_run_id(store, name, run_name)
    new_dataset = not DatasetStore(store).exists(name)
    if new_dataset:  # nothing can be stored yet: start Prefect while the data are stored
        runner.start()
    registered = _register(store, name, data, Xs, labels, ids, stage)
    if stamp is not None:
        remember_source(store, stamp, name, DatasetStore(store).manifest(name),
                        None if labels is None else len(set(labels.tolist())),
                        auto_metrics, params.mode)
    del Xs
    summary = None if new_dataset or run_name else stored_answer(
        store, plan_cluster(store, name, **values), runner.records_runs)
    n_jobs = values.pop("n_jobs")
    n_jobs = n_jobs if fewer is None else fewer
    if summary is None:
        summary = runner.run("cluster_flow", n_jobs, dataset=name, store_url=store.url,
                             run_name=run_name, **values)
        _say_fewer(summary, fewer)
    summary["dataset_registered"] = registered
    keep_answer(store, stamp, given, summary["run_id"], values)
    return _finish(store, summary, out_path)


def _register(store: Any, name: str, data: Sequence[str], Xs: list[Any], labels: Any, ids: Any,
              stage: StageLine) -> bool:
    """Register the views ``Xs`` as dataset ``name``'s first batch (its ``ingest`` stage
    said); whether they were written (False: stored already)."""
    started = time.time()
    try:
        _, registered = register_batch(store, name, Xs, labels, mode="create", ids=ids)
    except DatasetExistsError as exc:
        raise RequestError(exc.render(shlex.join(data))) from None
    stage("ingest", f"{Xs[0].shape[0]} samples, {len(Xs)} views "
                    f"{'stored' if registered else 'already stored'} "
                    f"({time.time() - started:.1f} s)")
    return registered


def _unchanged_files_answer(store: Any, stamp: str | None, name: str, values: dict[str, Any],
                            runner: FlowRunner, stage: StageLine,
                            reach_store: Callable[[], None]) -> dict[str, Any] | None:
    """The stored answer to ``cluster`` of files unchanged since their registration
    (:func:`pipeline.stored.answer_unchanged_files`), its ``ingest`` stage said; the store
    is checked as reachable if finding it fails."""
    try:
        quick = answer_unchanged_files(store, stamp, name, values, runner.records_runs)
    except Exception:
        reach_store()
        raise
    if quick is not None:
        stage("ingest", f"{quick['n_samples']} samples, {quick['n_views']} views already "
                        f"stored (files unchanged since they were registered)")
        quick["dataset_registered"] = False
    return quick


def _planned(store_url: str, plan: Callable[..., Plan], *args: Any,
             memory_limit: str | None, runner: FlowRunner) -> tuple[Any, Plan, int | None]:
    """The store, the run's plan, its memory checked (and the fewer view groups at once it
    fits with, if fewer: :func:`_fits`) and its flow able to run."""
    store = open_store(store_url)
    planned = _checked(plan, store, *args)
    fewer = _fits(memory_limit, planned.params, planned.data["n_samples"],
                  planned.data["n_features"])
    return store, planned, fewer


def _say_fewer(summary: dict[str, Any], fewer: int | None) -> None:
    """Note in a computed run's summary that it ran fewer view groups at once to fit."""
    if fewer is not None:
        summary["groups_at_once"] = fewer


def extend(store_url: str, run_id: str, n_groups: int, runner: FlowRunner, *,
           n_jobs: int | None = None, memory_limit: str | None = None,
           out: str | None = None) -> dict[str, Any]:
    """Add ``n_groups`` view groups to run ``run_id``'s ensemble, as a new run: its summary
    (a stored run's, nothing computed, if one computed exactly this). Parameters as
    :func:`cluster`'s."""
    out_path = _out_path(out)
    store, plan, fewer = _planned(store_url, plan_extend, run_id, n_groups, n_jobs,
                                  memory_limit=memory_limit, runner=runner)
    runner.check()
    summary = stored_answer(store, plan, runner.records_runs)
    if summary is None:
        summary = runner.run("extend_flow", n_jobs if fewer is None else fewer, run_id=run_id,
                             n_groups=n_groups, store_url=store.url)
        _say_fewer(summary, fewer)
    return _finish(store, summary, out_path)


def recluster(store_url: str, dataset: str, runner: FlowRunner, *,
              refresh_anchors: bool = False, from_scratch: bool = False,
              n_jobs: int | None = None, run_name: str | None = None,
              memory_limit: str | None = None, out: str | None = None) -> dict[str, Any]:
    """Relabel every sample of ``dataset`` with its latest ensemble, as a new run: its
    summary. Parameters as :func:`cluster`'s; :func:`flows.pipeline.recluster_flow` says
    what ``refresh_anchors`` and ``from_scratch`` do."""
    out_path = _out_path(out)
    store, _, fewer = _planned(store_url, plan_recluster, dataset, refresh_anchors, n_jobs,
                               from_scratch, memory_limit=memory_limit, runner=runner)
    if run_name is not None:
        new_run_id(store, dataset, run_name)
    runner.check()
    summary = runner.run("recluster_flow", n_jobs if fewer is None else fewer, dataset=dataset,
                         store_url=store.url, refresh_anchors=refresh_anchors,
                         run_name=run_name, from_scratch=from_scratch)
    _say_fewer(summary, fewer)
    return _finish(store, summary, out_path)
