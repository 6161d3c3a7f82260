"""The ``fastmice`` command: cluster multi-view data through the resumable Prefect pipeline.

Subcommands: ``cluster``, ``extend``, ``append``, ``recluster``, ``runs``, ``show``,
``report``, ``fsck``, ``store``, ``rm``, ``gc`` (:mod:`cli.store_commands`), ``export``,
``label`` (:mod:`cli.result_commands`), ``daemon`` (:mod:`cli.daemons`); each has
``--help``. Human-readable output and a
progress bar over view groups by default; with ``--json``, exactly one JSON object on stdout
(Prefect's and Dask's logs go to stderr).

Every input is validated before anything is written, so an unreadable file, a wrong layout,
mismatched views, a bad parameter, a bad ``--store``, an unknown run or a usage error exits
with status 1 and a one-line message, and leaves the store as it was. What the store heals on
the way (a corrupt file set aside, a damaged batch restored) is reported one line each, as
``fastmice COMMAND: warning: ...`` on stderr. ``--verbose`` shows Prefect's logs; set
``FASTMICE_DEBUG=1`` to get tracebacks. ``runs``, ``show``, ``report``, ``append``,
``store``, ``rm``, ``gc``, ``export`` and ``label`` never import Prefect.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from cli import commands
from cli.daemons import add_daemon_parser
from cli.engine import configure_environment
from cli.options import add_ensemble_options, add_jobs_option
from cli.output import Output, message, store_warnings
from cli.report_command import add_report_arguments, cmd_report
from cli.result_commands import add_result_parsers
from cli.store_commands import add_store_commands
from cli.stores import checked_store

__all__ = ["build_parser", "main"]

#: Exit status of every reported error, usage errors included.
ERROR_STATUS = 1
#: The subcommands that write to the store (``fsck`` too, with ``--repair``; ``rm`` and
#: ``gc`` unless ``--dry-run``).
WRITERS = ("cluster", "extend", "append", "recluster")
TIDIERS = ("rm", "gc")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, with the status of every error."""

    def error(self, message: str) -> NoReturn:
        message = " ".join(message.split())
        self.exit(ERROR_STATUS, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _common(parser: argparse.ArgumentParser, *, runs_flow: bool = False) -> None:
    parser.add_argument("--store", metavar="URL",
                        help="artifact store: a folder or an fsspec URL (default: "
                             "$FASTMICE_STORE or ./.fastmice)")
    if runs_flow:
        parser.add_argument("--dask", metavar="ADDRESS|local",
                            help="run the view groups on Dask: a scheduler address, or "
                                 "'local' for a LocalCluster (default: threads)")
        parser.add_argument("--out", metavar="PATH",
                            help="also write the labels (sample_id, label) to this .parquet "
                                 "or .csv file")
        parser.add_argument("--memory-limit", metavar="SIZE",
                            help="most memory the run may use, e.g. 8G (default: the memory "
                                 "free now); a run estimated to need more is refused before "
                                 "anything is written")
    parser.add_argument("--json", action="store_true",
                        help="print exactly one JSON object on stdout")
    parser.add_argument("--verbose", action="store_true", help="show Prefect's logs")


def _id_column(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--id-column", metavar="NAME",
                        help="the column of sample ids in .parquet/.csv views: stored with "
                             "the data, carried into every labels table, and the views' rows "
                             "are aligned by it")


def _add_cluster(sub: argparse._SubParsersAction) -> None:
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
    _id_column(p)
    p.add_argument("--run-name", metavar="RUN", help="run id (default: generated)")
    _finish(p, commands.cmd_cluster, runs_flow=True)


def _add_extend(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extend", help="add view groups to a run's ensemble",
                       description="Add DM view groups to the ensemble of RUN (the old groups "
                                   "are reused) and compute a new consensus, as a new run.")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--groups", type=int, required=True, metavar="DM",
                   help="number of view groups to add")
    _finish(p, commands.cmd_extend, runs_flow=True, jobs=True)


def _add_append(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("append", help="add a batch of new samples to a dataset",
                       description="Store DATA (same views and features as the dataset) as "
                                   "the next batch of DATASET; `fastmice recluster DATASET` "
                                   "then labels every sample.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("data", nargs="+", metavar="DATA")
    _id_column(p)
    _finish(p, commands.cmd_append)


def _add_recluster(sub: argparse._SubParsersAction) -> None:
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
    _finish(p, commands.cmd_recluster, runs_flow=True, jobs=True)


def _add_listing(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list the runs", description="List the runs of the store.")
    p.add_argument("--dataset", metavar="DATASET", help="only the runs of this dataset")
    _finish(p, commands.cmd_runs)
    p = sub.add_parser("show", help="show one run", description="Show the record of RUN.")
    p.add_argument("run", metavar="RUN")
    _finish(p, commands.cmd_show)


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a run's report (HTML)",
                       description="Write the report of RUN as one self-contained HTML file "
                                   "that opens offline: cluster sizes, a 2-D map of the "
                                   "samples, agreement between the base clusterings, the "
                                   "confusion matrix (when the data carry labels), the view "
                                   "groups, the time per stage, and what changed against the "
                                   "run a recluster or an extend started from.")
    add_report_arguments(p)
    _finish(p, cmd_report)


def _add_fsck(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fsck", help="check (and repair) the store",
                       description="Verify every checksum and every reference of the store "
                                   "and say what was found; with --repair, set corrupt files "
                                   "aside in quarantine, rebuild lost labels tables from their "
                                   "consensus and remove old leftovers of killed writes. Exit "
                                   "status 1 if something still needs you (a damaged input "
                                   "batch: register the same data again).")
    p.add_argument("--repair", action="store_true",
                   help="repair what can be repaired (default: only report)")
    _finish(p, commands.cmd_fsck)


def _finish(p: argparse.ArgumentParser, handler: Any, *, runs_flow: bool = False,
            jobs: bool = False) -> None:
    """The options every subcommand shares, ``--n-jobs`` if ``jobs``, and the handler."""
    if jobs:
        add_jobs_option(p)
    _common(p, runs_flow=runs_flow)
    p.set_defaults(handler=handler)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fastmice`` command."""
    parser = _Parser(prog="fastmice",
                     description="Cluster multi-view data with FastMICE through a resumable "
                                 "Prefect pipeline that reuses every stored intermediate. "
                                 "Run `fastmice COMMAND --help` for a command's options.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    for add in (_add_cluster, _add_extend, _add_append, _add_recluster, _add_listing,
                _add_report, _add_fsck):
        add(sub)
    add_store_commands(sub, _finish)
    add_result_parsers(sub, _finish)
    add_daemon_parser(sub, _finish)
    return parser


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _reached() -> None:
    """The store needs no check (a folder, or a URL whose root was listed)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fastmice`` console script; returns the exit status.

    ``SIGTERM`` is handled as ``SIGINT`` is: the command stops cleanly (finished steps are
    stored, Prefect's embedded server is stopped) and says to rerun it to resume.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    for arg in argv:
        if "\x00" in arg:
            parser.error(f"an argument contains a NUL character: {arg!r}")
    args = parser.parse_args(argv)
    configure_environment(args.verbose)
    output = Output(args.json)
    started = time.time()
    previous = signal.signal(signal.SIGTERM, _interrupted) \
        if threading.current_thread() is threading.main_thread() else None
    try:
        with store_warnings(args.command, output):
            writes = args.command in WRITERS or getattr(args, "repair", False) or (
                args.command in TIDIERS and not args.dry_run)
            # `cluster` lists a remote store's root only if no stored answer is found first.
            deferred: list[Callable[[], None]] = []
            if args.command != "daemon":  # the only command without a store
                args.store = checked_store(args.store, writes=writes, reach=deferred.append
                                           if args.command == "cluster" else None)
            args.reach_store = deferred[0] if deferred else _reached
            status = args.handler(args, output) or 0
    except KeyboardInterrupt:
        print("fastmice: interrupted; rerun the same command to resume.", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("FASTMICE_DEBUG"):
            raise
        text = message(exc)
        if output.json_mode:
            output.result({"error": text, "type": type(exc).__name__}, "")
        print(f"fastmice {args.command}: error: {text}", file=sys.stderr)
        return ERROR_STATUS
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if os.environ.get("FASTMICE_DEBUG"):
            print(f"fastmice: {time.time() - started:.1f} s", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
