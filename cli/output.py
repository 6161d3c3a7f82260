"""What the command prints: one result on stdout (text or one JSON object), progress on stderr."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["CommandError", "Output", "ProgressBar", "fsck_text", "group_counts", "message",
           "run_text", "stage_line", "store_warnings"]


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

    def progress(self) -> ProgressBar | None:
        """The listener that draws a flow's progress on stderr (none with ``--json``)."""
        return None if self.json_mode else ProgressBar()

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
    """A run's progress on stderr, drawn with rich: one line per stage (view groups,
    consensus, writing) with a bar, the groups finished by what they took (built, extended,
    reclustered, reused), the time spent and an estimate of the time left.

    A listener of :func:`pipeline.progress.listen` (given :class:`pipeline.progress.
    RunProgress` snapshots); ``close`` stops the drawing. On a terminal the lines are
    redrawn; otherwise they are printed once, when the run ends.
    """

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        left = _time_left_column()
        self._progress = Progress(
            TextColumn("{task.description:<12}"), BarColumn(bar_width=30),
            TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), left,
            console=Console(stderr=True), redirect_stdout=False, redirect_stderr=False)
        self._tasks: dict[str, Any] = {}
        self._last_stage = ""

    def _task(self, stage: str, total: float) -> Any:
        if stage not in self._tasks:
            if not self._tasks:
                self._progress.start()
            self._tasks[stage] = self._progress.add_task(stage, total=total or 1, counts="",
                                                         left=False)
        return self._tasks[stage]

    def __call__(self, progress: Any) -> None:
        if self._last_stage and self._last_stage != progress.stage:
            done = self._tasks[self._last_stage]
            self._progress.update(done, completed=self._progress.tasks[done].total,
                                  left=False)
        self._last_stage = progress.stage
        if progress.stage == "done":
            self.close()
            return
        if progress.stage == "view groups":
            task = self._task(progress.stage, progress.n_steps)
            self._progress.update(task, completed=progress.steps_done,
                                  counts=group_counts(progress), left=True)
        else:
            self._progress.update(self._task(progress.stage, 1), counts=progress.detail)

    def close(self) -> None:
        """Stop drawing (the lines stay)."""
        if self._tasks:
            self._progress.stop()
            self._tasks = {}


def _time_left_column() -> Any:
    """rich's estimate of the time left, shown for the stages that have one (``left``)."""
    from rich.progress import TimeRemainingColumn
    from rich.text import Text

    class TimeLeft(TimeRemainingColumn):
        def render(self, task: Any) -> Text:
            if not task.fields.get("left"):
                return Text("")
            return Text.assemble("~", super().render(task), " left")

    return TimeLeft()


def stage_line(output: Output, stage: str, text: str) -> None:
    """A stage the command does itself (``ingest``), as one line on stderr (not with
    ``--json``)."""
    if not output.json_mode:
        sys.stderr.write(f"{stage:<12} {text}\n")
        sys.stderr.flush()


def group_counts(progress: Any) -> str:
    """``"12/30 groups: 10 built, 2 reused"`` (the kinds of work done so far)."""
    done = ", ".join(f"{n} {work}" for work, n in progress.groups.items() if n)
    return f"{progress.groups_done}/{progress.n_groups} groups" + (f": {done}" if done else "")


def message(exc: BaseException) -> str:
    """One line naming the problem."""
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    text = " ".join(str(text).split()) or type(exc).__name__
    if isinstance(exc, FileNotFoundError) and exc.filename and exc.filename not in text:
        text = f"{text}: {exc.filename}"
    return text


def _work_lines(summary: dict[str, Any]) -> list[str]:
    """What the run built, extended, reclustered and reused: each view group once, by what
    it took (its base clustering with it: ``built``, ``extended``, ``reclustered`` or
    ``reused``, the words of the progress bar), then the graphs, the rows of later batches
    and the consensus."""
    work = summary.get("work") or {}
    kinds = summary.get("group_work")
    if kinds is None:  # a record written before the groups were counted by kind
        kinds = {"computed": summary["groups_computed"], "reused": summary["groups_reused"]}
    groups = ", ".join(f"{n} {kind}" for kind, n in kinds.items() if n) or "none"
    placed, reused = work.get("row_batches_computed", 0), work.get("row_batches_reused", 0)
    rows = (f"; rows of later batches: {placed} placed" + (f", {reused} reused" if reused
                                                           else "")) if placed + reused else ""
    consensus = summary.get("consensus_work") or (
        "computed" if work.get("consensus") else "reused")
    return [f"ensemble   k={summary['n_clusters']}, {summary['n_groups']} view groups: {groups}",
            f"work       graphs: {work.get('graphs_built', 0)} built{rows}; "
            f"consensus {consensus}"]


def run_text(summary: dict[str, Any]) -> str:
    lines = [
        f"run        {summary['run_id']} ({summary['kind']}"
        + (f" of {summary['parent_run']})" if summary.get("parent_run") else ")"),
        f"dataset    {summary['dataset']}: {summary['n_samples']} samples, "
        f"{summary['n_views']} views",
        *_work_lines(summary),
        *([f"k auto     chose {summary['n_clusters']} of {len(summary['k_candidates'])} "
           f"candidates by {summary.get('k_rule', 'an eigengap score')}; best first (k, "
           "score): "
           + ", ".join(f"{k} ({score:.3f})" for k, score in summary["k_candidates"][:10])]
          if summary.get("k_candidates") else []),
        *_ids_line(summary.get("relabel")),
        *([f"memory     {summary['groups_at_once']} view group(s) at a time: more would not "
           "fit (--memory-limit, or the memory free); the labels are the same"]
          if summary.get("groups_at_once") else []),
        f"time       {summary['seconds']:.1f} s in the flow",
        f"labels     {summary['labels_path']}",
    ]
    if summary.get("scores"):
        scores = summary["scores"]
        lines.append("scores     " + "  ".join(f"{name} {scores[key]:.4f}" for key, name in (
            ("nmi", "NMI"), ("ari", "ARI"), ("acc", "ACC"), ("purity", "purity"))))
    return "\n".join(lines) + "\n"


def _ids_line(relabel: dict[str, Any] | None) -> list[str]:
    """How the run's cluster ids follow its parent's (nothing for a run without one)."""
    if not relabel:
        return []
    return [f"ids        matched to {relabel['parent_run']}: {100 * relabel['kept']:.1f}% of "
            f"the {relabel['shared_samples']} shared samples keep their cluster id"]


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
