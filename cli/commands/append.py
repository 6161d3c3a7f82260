"""``fastmice append DATASET DATA``: store new samples as the next batch of a dataset (no
Prefect); ``fastmice recluster`` then labels every sample."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from cli.options import add_id_column, worded
from cli.output import Output
from pipeline.commands.store import append

__all__ = ["add_parsers", "cmd_append"]


def add_parsers(sub: argparse._SubParsersAction, finish: Callable[..., None]) -> None:
    """Declare ``append`` (``finish`` adds the shared options and the handler)."""
    p = sub.add_parser("append", help="add a batch of new samples to a dataset",
                       description="Store DATA (same views and features as the dataset) as "
                                   "the next batch of DATASET; `fastmice recluster DATASET` "
                                   "then labels every sample.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("data", nargs="+", metavar="DATA")
    add_id_column(p)
    finish(p, cmd_append)


def cmd_append(args: argparse.Namespace, output: Output) -> None:
    """Store DATA as the next batch of a dataset (no Prefect)."""
    with worded():
        result = append(args.store, args.dataset, args.data, args.id_column)
    dataset = result["dataset"]
    text = (f"dataset    {dataset}: batch {result['batch_id']} with "
            f"{result['n_new_samples']} samples appended; {result['n_samples']} samples in "
            f"{result['n_batches']} batches\nnext       fastmice recluster {dataset}\n"
            if result["appended"] else
            f"dataset    {dataset}: these samples are already stored (nothing appended); "
            f"{result['n_samples']} samples in {result['n_batches']} batches\n")
    output.result(result, text)
