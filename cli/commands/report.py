"""``fastmice report RUN [--out FILE.html]``: a run's report as one self-contained HTML file.

Reads the run from the store and writes its report (:mod:`pipeline.report`): cluster sizes,
a 2-D map of the samples, agreement between base clusterings, the confusion matrix when the
data carry labels, the view groups, the time per stage, and what changed against the run a
recluster or an extend started from. Never imports Prefect.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from cli.options import worded
from cli.output import Output
from pipeline.commands.results import report

__all__ = ["add_parsers", "add_report_arguments", "cmd_report"]


#: What ``fastmice report --help`` says the command does.
DESCRIPTION = ("Write the report of RUN as one self-contained HTML file "
               "that opens offline: cluster sizes, a 2-D map of the "
               "samples, agreement between the base clusterings, the "
               "confusion matrix (when the data carry labels), the view "
               "groups, the time per stage, and what changed against the "
               "run a recluster or an extend started from.")


def add_parsers(sub: argparse._SubParsersAction, finish: Callable[..., None]) -> None:
    """Declare ``report`` (``finish`` adds the shared options and the handler)."""
    p = sub.add_parser("report", help="write a run's report (HTML)", description=DESCRIPTION)
    add_report_arguments(p)
    finish(p, cmd_report)


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``fastmice report`` (the shared options are added by the caller)."""
    parser.add_argument("run", metavar="RUN")
    parser.add_argument("--out", metavar="FILE.html",
                        help="where to write the report (default: ./RUN.html)")
    parser.add_argument("--max-points", type=int, default=None, metavar="N",
                        help="most samples drawn on the map (default: 20000)")


def cmd_report(args: argparse.Namespace, output: Output) -> None:
    """Write the report of RUN as one HTML file that opens offline (no Prefect)."""
    with worded():
        result = report(args.store, args.run, args.out, args.max_points)
    output.result(result, f"report     {result['report_path']} "
                          f"({result['bytes'] / 1e3:,.0f} kB)\n"
                          f"open it    in any browser; it needs no network\n")
