"""``fastmice cluster``, ``extend`` and ``recluster``: the commands that run a flow.

Each is one call of :mod:`pipeline.commands.cluster`, which checks everything (files,
parameters, names, runs, memory) before anything is written, answers from the store when a
stored run computed exactly this, and otherwise runs the flow through
:class:`processes.engine.FlowRunner` (Prefect, imported only then); here the arguments are
parsed, passed on, and the summary printed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import Any

from cli.options import add_ensemble_options, add_id_column, ensemble_values, worded
from cli.output import Output, run_text, stage_line
from pipeline.commands.cluster import cluster, extend, recluster
from processes.engine import FlowRunner

__all__ = ["add_parsers", "cmd_cluster", "cmd_extend", "cmd_recluster"]


def add_parsers(sub: argparse._SubParsersAction, finish: Callable[..., None]) -> None:
    """The arguments of ``cluster``, ``extend`` and ``recluster`` (``finish(parser, handler,
    ...)`` adds the options every command shares and the handler)."""
    p = sub.add_parser("cluster", help="cluster data with a new ensemble",
                       description="Register DATA as a dataset and cluster it with a new "
                                   "FastMICE ensemble. DATA: one .npz (view0, view1, ..., "
                                   "optional labels), one .mat, one .npy/.parquet/.csv file "
                                   "per view, or a directory of view*.npy files with an "
                                   "optional labels.npy. Labels are used only for scores and "
                                   "the default k.")
    p.add_argument("data", nargs="+", metavar="DATA")
    add_ensemble_options(p, k_help="number of clusters, or 'auto' to choose it from the data "
                                   "(default: the number of classes in the data's labels, "
                                   "else auto)")
    p.add_argument("--name", metavar="DATASET",
                   help="dataset name (default: from the file name)")
    add_id_column(p)
    p.add_argument("--run-name", metavar="RUN", help="run id (default: generated)")
    finish(p, cmd_cluster, runs_flow=True)
    p = sub.add_parser("extend", help="add view groups to a run's ensemble",
                       description="Add DM view groups to the ensemble of RUN (the old groups "
                                   "are reused) and compute a new consensus, as a new run.")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--groups", type=int, required=True, metavar="DM",
                   help="number of view groups to add")
    finish(p, cmd_extend, runs_flow=True, jobs=True)
    p = sub.add_parser("recluster", help="relabel a dataset after new batches arrived",
                       description="Cluster every sample of DATASET with its latest "
                                   "ensemble: the old batches' graph rows are reused, new "
                                   "batches are placed with the ensemble's anchors (or new "
                                   "anchors with --refresh-anchors), the base clusterings "
                                   "are extended to them and the consensus is refined from "
                                   "the latest run's.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--refresh-anchors", action="store_true",
                   help="draw new anchors from every batch (recomputes every group)")
    p.add_argument("--from-scratch", action="store_true",
                   help="compute the base clusterings and the consensus anew instead of "
                        "refining the latest run's")
    p.add_argument("--run-name", metavar="RUN", help="run id (default: generated)")
    finish(p, cmd_recluster, runs_flow=True, jobs=True)


def _runner(args: argparse.Namespace, output: Output) -> FlowRunner:
    return FlowRunner(args.dask, output.progress)


def _print(output: Output, summary: dict[str, Any]) -> None:
    """The run's summary; a stored answer says so."""
    note = stored_note(summary) if summary.get("answered_from_store") else ""
    output.result(summary, run_text(summary) + note)


def stored_note(summary: dict[str, Any]) -> str:
    """The line the human-readable output adds to a stored answer."""
    return (f"stored     every step of run {summary['run_id']} is stored: answered from the "
            f"store, no flow run (set PREFECT_API_URL to record runs in a Prefect server)\n")


def cmd_cluster(args: argparse.Namespace, output: Output) -> None:
    """Register DATA as a dataset and cluster it with a new ensemble."""
    with output.redirected(), worded():
        summary = cluster(args.store, args.data, ensemble_values(args), _runner(args, output),
                          name=args.name, id_column=args.id_column, run_name=args.run_name,
                          memory_limit=args.memory_limit, out=args.out,
                          stage=partial(stage_line, output), reach_store=args.reach_store)
        _print(output, summary)


def cmd_extend(args: argparse.Namespace, output: Output) -> None:
    """Add view groups to a run's ensemble, as a new run."""
    with output.redirected(), worded():
        summary = extend(args.store, args.run, args.groups, _runner(args, output),
                         n_jobs=args.n_jobs, memory_limit=args.memory_limit, out=args.out)
        _print(output, summary)


def cmd_recluster(args: argparse.Namespace, output: Output) -> None:
    """Relabel every sample of a dataset with its latest ensemble."""
    with output.redirected(), worded():
        summary = recluster(args.store, args.dataset, _runner(args, output),
                            refresh_anchors=args.refresh_anchors,
                            from_scratch=args.from_scratch, n_jobs=args.n_jobs,
                            run_name=args.run_name, memory_limit=args.memory_limit,
                            out=args.out)
        _print(output, summary)
