"""The ``fastmice`` command: cluster multi-view data through the resumable Prefect pipeline.

Subcommands, each in :mod:`cli.commands` (its table says which file holds which):
``cluster``, ``extend``, ``recluster``, ``append``, ``runs``, ``show``, ``report``,
``fsck``, ``store``, ``rm``, ``gc``, ``export``, ``label``, ``daemon``; each has ``--help``.
Human-readable output and a progress bar over view groups by default; with ``--json``,
exactly one JSON object on stdout (Prefect's and Dask's logs go to stderr).

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

from cli.commands import append, cluster, daemon, report, results, runs, store
from cli.options import add_jobs_option
from cli.output import Output, message, store_warnings
from cli.stores import checked_store
from processes.engine import configure_environment

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
    for command in (cluster, append, runs, report, store, results, daemon):
        command.add_parsers(sub, _finish)
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
