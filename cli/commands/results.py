"""What a run gives back: ``fastmice export`` (its labels, with the samples' ids) and
``fastmice label`` (new samples labelled by its stored ensemble). Neither imports Prefect,
and neither writes to the store.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from cli.options import worded
from cli.output import Output
from pipeline.commands.results import export, label

__all__ = ["add_parsers", "cmd_export", "cmd_label"]


def add_parsers(sub: argparse._SubParsersAction, finish: Callable[..., None]) -> None:
    """Declare ``export`` and ``label`` (``finish`` adds the shared options and handler)."""
    p = sub.add_parser("export", help="write a run's labels, with sample ids, to a file",
                       description="Write the labels of RUN (sample_id, label) to FILE: "
                                   ".parquet (with the run's metadata), .csv, or .npy (a "
                                   "structured array with the fields sample_id and label). "
                                   "The sample ids are those registered with the data (its "
                                   "--id-column), else 0..N-1.")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="the file to write: .parquet, .csv or .npy")
    finish(p, cmd_export)
    p = sub.add_parser("label", help="label new samples with a run's ensemble",
                       description="Label the samples of DATA (the same views and features as "
                                   "RUN's dataset) through RUN's stored anchors, base "
                                   "partitions and consensus, without partitioning again and "
                                   "without changing the run. Without --out the labels are "
                                   "printed as CSV (sample_id,label).")
    p.add_argument("run", metavar="RUN")
    p.add_argument("data", nargs="+", metavar="DATA")
    p.add_argument("--out", metavar="FILE", help="write the labels to a .parquet, .csv or "
                                                 ".npy file")
    p.add_argument("--id-column", metavar="NAME",
                   help="the column of sample ids in .parquet/.csv views (views are aligned "
                        "by it)")
    p.add_argument("--metric", help="the metric(s) meant for the views: refused unless the "
                                    "run's")
    p.add_argument("--n-jobs", type=int, metavar="N",
                   help="view groups placed at once, in threads (default: 1)")
    finish(p, cmd_label)


def cmd_export(args: argparse.Namespace, output: Output) -> None:
    """Write a run's labels with their sample ids to ``--out`` (no Prefect)."""
    with worded():
        summary = export(args.store, args.run, args.out)
    output.result(summary, f"run        {summary['run_id']}\n"
                           f"labels     {summary['n_samples']} samples, "
                           f"{summary['id_kind']} ids -> {summary['path']}\n")


def cmd_label(args: argparse.Namespace, output: Output) -> None:
    """Label new samples through a stored run (no Prefect, nothing written to the store)."""
    with worded():
        result = label(args.store, args.run, args.data, id_column=args.id_column,
                       metric=args.metric, n_jobs=args.n_jobs, out=args.out)
    if "labels_path" in result:
        text = (f"run        {args.run}\nlabelled   {result['n_samples']} samples -> "
                f"{result['labels_path']}\nsizes      {result['cluster_sizes']}\n")
    else:
        text = "sample_id,label\n" + "".join(
            f"{i},{label}\n" for i, label in zip(result["sample_ids"], result["labels"],
                                                 strict=True))
    output.result(result, text)
