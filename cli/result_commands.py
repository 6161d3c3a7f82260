"""What a run gives back: ``fastmice export`` (its labels, with the samples' ids) and
``fastmice label`` (new samples labelled by its stored ensemble). Neither imports Prefect,
and neither writes to the store.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from cli.output import CommandError, Output
from pipeline.export import check_export_path, export_run, write_labels
from pipeline.ingest import read_samples
from pipeline.predict import check_new_views, load_model, predict_labels
from storage import labels_table, open_store

__all__ = ["add_result_parsers", "cmd_export", "cmd_label"]

#: How many labels ``label`` prints on stdout without ``--out`` before it says to use it.
PRINT_LIMIT = 100_000


def add_result_parsers(sub: argparse._SubParsersAction, finish: Callable[..., None]) -> None:
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


def _checked_out(path: str | None) -> Any:
    try:
        return None if path is None else check_export_path(path)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def cmd_export(args: argparse.Namespace, output: Output) -> None:
    """Write a run's labels with their sample ids to ``--out`` (no Prefect)."""
    _checked_out(args.out)
    summary = export_run(open_store(args.store), args.run, args.out)
    output.result(summary, f"run        {summary['run_id']}\n"
                           f"labels     {summary['n_samples']} samples, "
                           f"{summary['id_kind']} ids -> {summary['path']}\n")


def cmd_label(args: argparse.Namespace, output: Output) -> None:
    """Label new samples through a stored run (no Prefect, nothing written to the store)."""
    out = _checked_out(args.out)
    store = open_store(args.store)
    model = load_model(store, args.run)
    Xs, _, ids = read_samples(args.data, id_column=args.id_column)
    check_new_views(model, Xs, args.metric)
    labels = predict_labels(model, Xs, args.n_jobs)
    if ids is None:
        ids = np.arange(labels.shape[0], dtype=np.int64)
    sizes = np.bincount(labels, minlength=model.n_clusters).tolist()
    result: dict[str, Any] = {"run_id": args.run, "n_samples": int(labels.shape[0]),
                              "cluster_sizes": sizes}
    if out is not None:
        table = labels_table(ids, {"label": labels}, {"run_id": args.run, "labelled": "new"})
        result["labels_path"] = str(write_labels(table, out))
        text = (f"run        {args.run}\nlabelled   {labels.shape[0]} samples -> "
                f"{result['labels_path']}\nsizes      {sizes}\n")
    else:
        if labels.shape[0] > PRINT_LIMIT:
            raise CommandError(f"{labels.shape[0]} samples: pass --out FILE to write their "
                               f"labels (at most {PRINT_LIMIT} are printed).")
        result.update(sample_ids=ids.tolist(), labels=labels.tolist())
        text = "sample_id,label\n" + "".join(f"{i},{label}\n" for i, label in
                                             zip(ids.tolist(), labels.tolist(), strict=True))
    output.result(result, text)
