"""``fastmice runs`` and ``fastmice show RUN``: the runs of a store, and one run's record
(no Prefect)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from cli.options import worded
from cli.output import Output, run_text
from pipeline.commands.store import runs, show

__all__ = ["add_parsers", "cmd_runs", "cmd_show"]


def add_parsers(sub: argparse._SubParsersAction, finish: Callable[..., None]) -> None:
    """Declare ``runs`` and ``show`` (``finish`` adds the shared options and the handler)."""
    p = sub.add_parser("runs", help="list the runs", description="List the runs of the store.")
    p.add_argument("--dataset", metavar="DATASET", help="only the runs of this dataset")
    finish(p, cmd_runs)
    p = sub.add_parser("show", help="show one run", description="Show the record of RUN.")
    p.add_argument("run", metavar="RUN")
    finish(p, cmd_show)


def cmd_runs(args: argparse.Namespace, output: Output) -> None:
    """List the runs of the store (no Prefect)."""
    listed = runs(args.store, args.dataset)
    rows = [f"{'run':<48} {'kind':<9} {'dataset':<16} {'N':>7} {'k':>3} {'M':>3} "
            f"{'new':>3} {'NMI':>6} {'sec':>7}  created"]
    for r in listed["runs"]:
        nmi = f"{r['scores']['nmi']:.4f}" if r.get("scores") else "-"
        rows.append(f"{r['run_id']:<48} {r['kind']:<9} {r['dataset']:<16} {r['n_samples']:>7} "
                    f"{r['n_clusters']:>3} {r['n_groups']:>3} {r['groups_computed']:>3} "
                    f"{nmi:>6} {r['seconds']:>7.1f}  {r['created'][:19]}")
    text = "\n".join(rows) + "\n" if listed["runs"] else f"no runs in store {listed['store']}\n"
    output.result(listed, text)


def cmd_show(args: argparse.Namespace, output: Output) -> None:
    """Show one run's record (no Prefect); a lost labels table is rebuilt from the consensus."""
    with worded():
        record, summary = show(args.store, args.run)
    text = run_text(summary) + (
        f"created    {record['created']}\n"
        f"batches    {record['batches']} (anchors from {record['anchor_batches']})\n"
        f"params     {json.dumps(record['params'])}, root_seed {record.get('root_seed')}\n"
        f"groups     " + " ".join(f"{g['group']}{'*' if g['computed'] else ''}"
                                  for g in record["groups"]) + "   (* computed in this run)\n"
        f"sizes      {record['cluster_sizes']}\n")
    output.result(record, text)
