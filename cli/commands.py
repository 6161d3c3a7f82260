"""The subcommands of ``fastmice``: one function each, ``cmd_<name>(args, output)``.

Each validates everything it can (files, parameters, names, runs) with the Prefect-free
:mod:`pipeline` before anything is written; ``cluster``, ``extend`` and ``recluster`` then
run a flow through :mod:`cli.engine`, which imports Prefect.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import time
from pathlib import Path
from typing import Any

from cli.engine import check_dask, run_flow, start_embedded_api
from cli.options import ensemble_values, option_names
from cli.output import CommandError, Output, fsck_text, run_text, stage_line
from cli.stored import answer_unchanged_files, keep_answer, stored_answer, stored_note
from pipeline.ingest import default_dataset_name, read_samples, register_batch
from pipeline.ingest.read import DatasetExistsError
from pipeline.keys import RUN
from pipeline.params import ensemble_params, resolved_metrics
from pipeline.plans import plan_cluster, plan_extend, plan_recluster
from pipeline.resources import check_memory, parse_size
from pipeline.results import export_labels, labels_damage, rebuild_labels
from pipeline.runs import list_runs, new_run_id, read_run, run_summary
from pipeline.sources import remember_source, source_stamp
from storage import DatasetStore, open_store, validate_name
from storage.fsck import check_store

__all__ = ["cmd_append", "cmd_cluster", "cmd_extend", "cmd_fsck", "cmd_recluster", "cmd_runs",
           "cmd_show"]


def _check_out(path: str | None) -> Path | None:
    if path is None:
        return None
    out = Path(path)
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise CommandError(f"--out {path}: expected a .parquet or .csv file name.")
    if out.is_dir():
        raise CommandError(f"--out {path} is a directory; give a file name.")
    if not out.absolute().parent.is_dir():
        raise CommandError(f"--out {path}: folder {out.absolute().parent} does not exist.")
    return out


def _checked(check: Any, *args: Any, **kwargs: Any) -> Any:
    """``check(...)``, with a parameter error worded with the command's option names."""
    try:
        return check(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        raise CommandError(option_names(str(exc))) from None


def _check_memory(args: argparse.Namespace, params: Any, n_samples: int, n_features: list[int],
                  itemsize: int = 8) -> None:
    """Refuse a run that would not fit in memory (before anything is written)."""
    limit = None if args.memory_limit is None else _checked(parse_size, args.memory_limit)
    check_memory(params, n_samples, n_features, itemsize=itemsize, limit=limit)


def _finish(store: Any, summary: dict[str, Any], out: Path | None, output: Output) -> None:
    """Copy the labels to ``--out`` (labels_path then points there) and print the summary."""
    if out is not None:
        summary["labels_path"] = str(export_labels(store, summary["run_id"], out))
    note = stored_note(summary) if summary.get("answered_from_store") else ""
    output.result(summary, run_text(summary) + note)


def _quick_answer(args: argparse.Namespace, store: Any, stamp: str | None, name: str,
                  values: dict[str, Any]) -> dict[str, Any] | None:
    """The stored answer to ``cluster`` of unchanged files, if any; else the store is
    checked as reachable (its root listed: an unreachable one is said in one line)."""
    reach_store = getattr(args, "reach_store", None) or (lambda: None)
    try:
        quick = None if args.run_name else answer_unchanged_files(store, stamp, name, values)
    except Exception:
        reach_store()
        raise
    if quick is None:
        reach_store()
    return quick


def cmd_cluster(args: argparse.Namespace, output: Output) -> None:
    """Register DATA as a dataset and cluster it with a new ensemble."""
    out = _check_out(args.out)
    store = open_store(args.store)
    name = args.name if args.name is not None else default_dataset_name(args.data)
    validate_name(name, "dataset name (--name)")
    with output.redirected():
        values = ensemble_values(args)

        def refuse_early(n_samples: int, n_features: list[int], itemsize: int) -> None:
            # Files on disk: a run that would not fit is refused before their values are read.
            if values["n_clusters"] is not None:
                params = _checked(ensemble_params, n_samples, len(n_features), **values)
                _check_memory(args, params, n_samples, n_features, itemsize)

        check_dask(args.dask)
        stamp = source_stamp(args.data, name, args.id_column)
        quick = _quick_answer(args, store, stamp, name, values)
        if quick is not None:
            stage_line(output, "ingest", f"{quick['n_samples']} samples, {quick['n_views']} "
                       f"views already stored (files unchanged since they were registered)")
            quick["dataset_registered"] = False
            return _finish(store, quick, out, output)
        Xs, labels, ids = read_samples(args.data, id_column=args.id_column,
                                       on_shapes=refuse_early)
        if values["n_clusters"] is None:  # the classes of the labels, else chosen from the data
            values["n_clusters"] = "auto" if labels is None else len(set(labels.tolist()))
        params = _checked(ensemble_params, Xs[0].shape[0], len(Xs), **values)
        values["metric"] = resolved_metrics(params, Xs)  # "auto": the choice, in the record
        given = [params.metric] * len(Xs) if isinstance(params.metric, str) else params.metric
        auto_metrics = [m if g == "auto" else None for g, m in zip(given, values["metric"],
                                                                    strict=True)]
        _check_memory(args, params, Xs[0].shape[0], [X.shape[1] for X in Xs],
                      max(X.dtype.itemsize for X in Xs))
        if args.run_name is not None:
            new_run_id(store, name, args.run_name)
        new_dataset = not DatasetStore(store).exists(name)
        if new_dataset:  # nothing can be stored yet: start Prefect while the data are stored
            start_embedded_api()
        started = time.time()
        try:
            _, registered = register_batch(store, name, Xs, labels, mode="create", ids=ids)
        except DatasetExistsError as exc:
            raise CommandError(exc.render(shlex.join(args.data))) from None
        stage_line(output, "ingest", f"{Xs[0].shape[0]} samples, {len(Xs)} views "
                   f"{'stored' if registered else 'already stored'} "
                   f"({time.time() - started:.1f} s)")
        if stamp is not None:
            remember_source(store, stamp, name, DatasetStore(store).manifest(name),
                            None if labels is None else len(set(labels.tolist())),
                            auto_metrics, params.mode)
        del Xs
        summary = None if new_dataset or args.run_name else stored_answer(
            store, plan_cluster(store, name, **values))
        n_jobs = values.pop("n_jobs")
        if summary is None:
            summary = run_flow("cluster_flow", output, n_jobs, args.dask, dataset=name,
                               store_url=store.url, run_name=args.run_name, **values)
        summary["dataset_registered"] = registered
        keep_answer(store, stamp, ensemble_values(args), summary["run_id"], values)
        _finish(store, summary, out, output)


def cmd_extend(args: argparse.Namespace, output: Output) -> None:
    """Add view groups to a run's ensemble, as a new run."""
    out = _check_out(args.out)
    store = open_store(args.store)
    plan = _checked(plan_extend, store, args.run, args.groups, args.n_jobs)
    _check_memory(args, plan.params, plan.data["n_samples"], plan.data["n_features"])
    check_dask(args.dask)
    with output.redirected():
        summary = stored_answer(store, plan) or run_flow(
            "extend_flow", output, args.n_jobs, args.dask, run_id=args.run,
            n_groups=args.groups, store_url=store.url)
        _finish(store, summary, out, output)


def cmd_recluster(args: argparse.Namespace, output: Output) -> None:
    """Relabel every sample of a dataset with its latest ensemble."""
    out = _check_out(args.out)
    store = open_store(args.store)
    plan = _checked(plan_recluster, store, args.dataset, args.refresh_anchors, args.n_jobs,
                    args.from_scratch)
    _check_memory(args, plan.params, plan.data["n_samples"], plan.data["n_features"])
    if args.run_name is not None:
        new_run_id(store, args.dataset, args.run_name)
    check_dask(args.dask)
    with output.redirected():
        summary = run_flow("recluster_flow", output, args.n_jobs, args.dask,
                           dataset=args.dataset, store_url=store.url,
                           refresh_anchors=args.refresh_anchors, run_name=args.run_name,
                           from_scratch=args.from_scratch)
        _finish(store, summary, out, output)


def cmd_append(args: argparse.Namespace, output: Output) -> None:
    """Store DATA as the next batch of a dataset (no Prefect)."""
    store = open_store(args.store)
    validate_name(args.dataset, "dataset name")
    if not DatasetStore(store).exists(args.dataset):
        raise CommandError(f"Unknown dataset {args.dataset!r} in store {store.url}; create it "
                           f"with `fastmice cluster DATA --name {args.dataset}`.")
    Xs, labels, ids = read_samples(args.data, id_column=args.id_column)
    manifest, written = register_batch(store, args.dataset, Xs, labels, mode="append", ids=ids)
    batch = manifest["batches"][-1]
    result = {"dataset": args.dataset, "appended": written, "batch_id": batch["batch_id"],
              "n_new_samples": int(Xs[0].shape[0]), "n_batches": len(manifest["batches"]),
              "n_samples": manifest["n_samples"], "fingerprint": manifest["fingerprint"],
              "store": store.url}
    text = (f"dataset    {args.dataset}: batch {batch['batch_id']} with "
            f"{result['n_new_samples']} samples appended; {result['n_samples']} samples in "
            f"{result['n_batches']} batches\nnext       fastmice recluster {args.dataset}\n"
            if written else
            f"dataset    {args.dataset}: these samples are already stored (nothing appended); "
            f"{result['n_samples']} samples in {result['n_batches']} batches\n")
    output.result(result, text)


def cmd_runs(args: argparse.Namespace, output: Output) -> None:
    """List the runs of the store (no Prefect)."""
    store = open_store(args.store)
    runs = [{**run_summary(r), "created": r["created"]}
            for r in list_runs(store, args.dataset)]
    rows = [f"{'run':<48} {'kind':<9} {'dataset':<16} {'N':>7} {'k':>3} {'M':>3} "
            f"{'new':>3} {'NMI':>6} {'sec':>7}  created"]
    for r in runs:
        nmi = f"{r['scores']['nmi']:.4f}" if r.get("scores") else "-"
        rows.append(f"{r['run_id']:<48} {r['kind']:<9} {r['dataset']:<16} {r['n_samples']:>7} "
                    f"{r['n_clusters']:>3} {r['n_groups']:>3} {r['groups_computed']:>3} "
                    f"{nmi:>6} {r['seconds']:>7.1f}  {r['created'][:19]}")
    text = "\n".join(rows) + "\n" if runs else f"no runs in store {store.url}\n"
    output.result({"store": store.url, "runs": runs}, text)


def cmd_show(args: argparse.Namespace, output: Output) -> None:
    """Show one run's record (no Prefect); a lost labels table is rebuilt from the consensus."""
    store = open_store(args.store)
    record = read_run(store, args.run)
    _check_labels(store, record, output)
    text = run_text(run_summary(record)) + (
        f"created    {record['created']}\n"
        f"batches    {record['batches']} (anchors from {record['anchor_batches']})\n"
        f"params     {json.dumps(record['params'])}, root_seed {record.get('root_seed')}\n"
        f"groups     " + " ".join(f"{g['group']}{'*' if g['computed'] else ''}"
                                  for g in record["groups"]) + "   (* computed in this run)\n"
        f"sizes      {record['cluster_sizes']}\n")
    output.result(record, text)


def _check_labels(store: Any, record: dict[str, Any], output: Output) -> None:
    """Make sure the run's labels table is readable: rebuild it if it can, else say how."""
    reason = labels_damage(store, record) if record.get("labels") else None
    if reason is None:
        return
    if not rebuild_labels(store, record):
        raise CommandError(
            f"The labels of run {record['run_id']} ({record['labels_path']}) are "
            f"{'missing' if reason == 'missing' else 'corrupt: ' + reason} and cannot be "
            f"rebuilt (its consensus is gone too); rerun the command that made the run to "
            f"recompute them.")
    text = (f"The labels of run {record['run_id']} were "
            f"{'missing' if reason == 'missing' else 'corrupt (' + reason + ')'}; rebuilt from "
            f"the stored consensus ({record['labels_path']}).")
    logging.getLogger("storage").warning(text)


def cmd_fsck(args: argparse.Namespace, output: Output) -> int:
    """Verify (and with ``--repair`` mend) the store; status 1 if something still needs you."""
    store = open_store(args.store)
    report = check_store(store, repair=args.repair)
    runs = [r for (kind, _), r in sorted(report.records.items()) if kind == RUN]
    for record in runs:
        if record.get("labels") is None or labels_damage(
                store, record, quarantine=args.repair) is None:
            continue
        if not args.repair:
            done, left = "fsck --repair rebuilds it from the stored consensus", True
        elif rebuild_labels(store, record):
            done, left = "rebuilt from the stored consensus", False
        else:
            done, left = "cannot be rebuilt (its consensus is gone): rerun its command", True
        report.add("lost-labels", f"run {record['run_id']}", "labels table missing or corrupt",
                   done, left)
    output.result(report.to_dict(), fsck_text(report))
    return 1 if report.problems else 0
