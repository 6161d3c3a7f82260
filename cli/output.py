"""What the command prints: one result on stdout (text or one JSON object), progress on stderr."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["CommandError", "Output", "ProgressBar", "fsck_text", "message", "run_text",
           "store_warnings"]


class CommandError(Exception):
    """An error reported as one line, without a traceback."""


class Output:
    """Stdout for the result only: everything else written to fd 1 goes to stderr.

    Prefect's ephemeral server, Dask workers and libraries may print; while a command runs,
    file descriptor 1 points at stderr, and the result is written to the real stdout last.
    """

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.warnings: list[str] = []
        self._stdout: int | None = None

    @contextlib.contextmanager
    def redirected(self) -> Iterator[None]:
        sys.stdout.flush()
        self._stdout = os.dup(1)
        os.dup2(2, 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(self._stdout, 1)
            os.close(self._stdout)
            self._stdout = None

    def result(self, obj: dict[str, Any], text: str) -> None:
        """Write the result: ``obj`` as one JSON line (with ``warnings`` if there were any),
        or ``text``."""
        if self.warnings and self.json_mode:
            obj = {**obj, "warnings": list(self.warnings)}
        out = json.dumps(obj, default=str) + "\n" if self.json_mode else text
        data = out.encode()
        fd = self._stdout if self._stdout is not None else 1
        sys.stdout.flush()
        while data:
            data = data[os.write(fd, data):]


class _WarningLines(logging.Handler):
    """Each warning of the store (a quarantine, a restore) as one line on stderr."""

    def __init__(self, command: str, output: Output) -> None:
        super().__init__(logging.WARNING)
        self.command, self.output = command, output

    def emit(self, record: logging.LogRecord) -> None:
        text = " ".join(record.getMessage().split())
        self.output.warnings.append(text)
        sys.stderr.write(f"fastmice {self.command}: warning: {text}\n")
        sys.stderr.flush()


@contextlib.contextmanager
def store_warnings(command: str, output: Output) -> Iterator[None]:
    """Report what the store heals (corrupt files set aside, batches restored) one line each,
    on stderr and in ``output.warnings``, while the command runs."""
    logger = logging.getLogger("storage")
    handler = _WarningLines(command, output)
    propagate, level = logger.propagate, logger.level
    logger.addHandler(handler)
    logger.propagate = False  # not twice, through Prefect's console handler
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate, logger.level = propagate, level


class ProgressBar:
    """A progress bar over view groups on stderr (one line, redrawn; lines if not a TTY)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self._last = -1

    def __call__(self, steps: int, n_steps: int, groups: int, n_groups: int) -> None:
        width = 30
        fraction = steps / n_steps if n_steps else 1.0
        tenth = int(fraction * 10)
        if not self.tty and tenth == self._last:
            return
        self._last = tenth
        filled = round(fraction * width)
        line = (f"view groups [{'#' * filled}{'.' * (width - filled)}] "
                f"{groups}/{n_groups} done ({100 * fraction:3.0f}% of {n_steps} steps)")
        sys.stderr.write("\r" + line if self.tty else line + "\n")
        if self.tty and steps == n_steps:
            sys.stderr.write("\n")
        sys.stderr.flush()


def message(exc: BaseException) -> str:
    """One line naming the problem."""
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    text = " ".join(str(text).split()) or type(exc).__name__
    if isinstance(exc, FileNotFoundError) and exc.filename and exc.filename not in text:
        text = f"{text}: {exc.filename}"
    return text


def run_text(summary: dict[str, Any]) -> str:
    work = summary.get("work") or {}
    lines = [
        f"run        {summary['run_id']} ({summary['kind']}"
        + (f" of {summary['parent_run']})" if summary.get("parent_run") else ")"),
        f"dataset    {summary['dataset']}: {summary['n_samples']} samples, "
        f"{summary['n_views']} views",
        f"ensemble   k={summary['n_clusters']}, {summary['n_groups']} view groups: "
        f"{summary['groups_computed']} computed, {summary['groups_reused']} reused",
        *([f"k auto     chose {summary['n_clusters']} (largest eigengap x ln k); candidates "
           "(k, gap): " + ", ".join(f"{k} ({gap:.3f})" for k, gap in summary["k_candidates"][:8])]
          if summary.get("k_candidates") else []),
        f"work       {work.get('graphs_built', 0)} graphs built, "
        f"{work.get('row_batches_computed', 0)} batch rows placed "
        f"({work.get('row_batches_reused', 0)} reused), "
        f"{work.get('base_clusterings', 0)} base clusterings, "
        f"consensus {'computed' if work.get('consensus') else 'reused'}",
        f"time       {summary['seconds']:.1f} s in the flow",
        f"labels     {summary['labels_path']}",
    ]
    if summary.get("scores"):
        scores = summary["scores"]
        lines.append("scores     " + "  ".join(f"{name} {scores[key]:.4f}" for key, name in (
            ("nmi", "NMI"), ("ari", "ARI"), ("acc", "ACC"), ("purity", "purity"))))
    return "\n".join(lines) + "\n"


def fsck_text(report: Any) -> str:
    """What ``fastmice fsck`` prints: what was checked, each finding, the verdict."""
    counts = report.counts
    lines = [f"store      {report.store}",
             f"checked    {counts.get('artifacts', 0)} artifacts, {counts.get('records', 0)} "
             f"record versions, {counts.get('references', 0)} references; "
             f"{counts.get('quarantined', 0)} entries in quarantine",
             *(f"found      {f.line()}" for f in report.findings)]
    if not report.findings:
        verdict = "sound"
    else:
        verdict = f"{len(report.findings)} findings, {report.problems} needing action"
        if report.problems and not report.repair:
            verdict += " (fastmice fsck --repair repairs what it can)"
    return "\n".join([*lines, f"status     {verdict}"]) + "\n"
