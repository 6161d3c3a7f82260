"""``fastmice report RUN [--out FILE.html]``: a run's report as one self-contained HTML file.

Reads the run from the store and writes its report (:mod:`pipeline.report`): cluster sizes,
a 2-D map of the samples, agreement between base clusterings, the confusion matrix when the
data carry labels, the view groups, the time per stage, and what changed against the run a
recluster or an extend started from. Never imports Prefect.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from cli.output import CommandError, Output
from pipeline.results import labels_damage, rebuild_labels
from pipeline.runs import read_run
from storage import open_store, validate_name

__all__ = ["add_report_arguments", "cmd_report"]


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``fastmice report`` (the shared options are added by the caller)."""
    parser.add_argument("run", metavar="RUN")
    parser.add_argument("--out", metavar="FILE.html",
                        help="where to write the report (default: ./RUN.html)")
    parser.add_argument("--max-points", type=int, default=None, metavar="N",
                        help="most samples drawn on the map (default: 20000)")


def _checked_out(path: str | None, run_id: str) -> Path:
    out = Path(path) if path is not None else Path(f"{run_id}.html")
    if out.suffix.lower() not in (".html", ".htm"):
        raise CommandError(f"--out {out}: expected an .html file name.")
    if out.is_dir():
        raise CommandError(f"--out {out} is a directory; give a file name.")
    if not out.absolute().parent.is_dir():
        raise CommandError(f"--out {out}: folder {out.absolute().parent} does not exist.")
    return out


def _labels_readable(store: Any, run_id: str) -> None:
    """Rebuild the run's lost labels table from its consensus (as ``show`` does), or say
    why the report cannot be made."""
    record = read_run(store, run_id)
    reason = labels_damage(store, record) if record.get("labels") else None
    if reason is None:
        return
    if not rebuild_labels(store, record):
        raise CommandError(f"The labels of run {run_id} are {reason} and cannot be rebuilt "
                           f"(its consensus is gone too); rerun the command that made the "
                           f"run to recompute them.")
    logging.getLogger("storage").warning(
        f"The labels of run {run_id} were {reason}; rebuilt from the stored consensus.")


def cmd_report(args: argparse.Namespace, output: Output) -> None:
    """Write the report of RUN as one HTML file that opens offline (no Prefect)."""
    # Imported here so that the other commands do not pay for importing matplotlib.
    from pipeline.report import MAX_MAP_POINTS, write_report

    validate_name(args.run, "run id")
    out = _checked_out(args.out, args.run)
    max_points = MAX_MAP_POINTS if args.max_points is None else args.max_points
    if max_points < 2:
        raise CommandError(f"--max-points {max_points} must be >= 2.")
    store = open_store(args.store)
    _labels_readable(store, args.run)
    path = write_report(store, args.run, out, max_points=max_points)
    result = {"run_id": args.run, "report_path": str(path), "bytes": path.stat().st_size,
              "store": store.url}
    output.result(result, f"report     {path} ({path.stat().st_size / 1e3:,.0f} kB)\n"
                          f"open it    in any browser; it needs no network\n")
