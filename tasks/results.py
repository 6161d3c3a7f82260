"""Tasks writing a run's results: labels, scores and the run record; Prefect artifacts."""

from __future__ import annotations

import re
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from pipeline.results import finish_run
from storage import open_store
from tasks._options import TASK_OPTIONS

__all__ = ["artifact_key", "report_artifact", "report_run", "write_results"]


def artifact_key(dataset: str, what: str) -> str:
    """A Prefect artifact key (lower-case letters, digits, dashes) for a dataset."""
    slug = re.sub(r"[^a-z0-9]+", "-", dataset.lower()).strip("-")[:60] or "data"
    return f"fastmice-{slug}-{what}"


@task(name="write-results", **TASK_OPTIONS)
def write_results(store_url: str, record: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """Labels, scores and the run record of :func:`pipeline.results.run_record` ``record``
    (pipeline.results.finish_run): writes ``labels`` and ``run/<run_id>``; returns the record."""
    return finish_run(open_store(store_url), record, data)


@task(name="report-run", **TASK_OPTIONS)
def report_run(record: dict[str, Any]) -> None:
    """Prefect artifacts of a run: scores (when ground truth is known), cluster sizes, summary.

    Parameters
    ----------
    record : dict
        :func:`write_results`'s result.
    """
    dataset, run_id = record["dataset"], record["run_id"]
    if record["scores"] is not None:
        create_table_artifact(
            [{"metric": k, "value": round(v, 4)} for k, v in record["scores"].items()],
            key=artifact_key(dataset, "scores"), description=f"Scores of run {run_id}.")
    create_table_artifact(
        [{"cluster": c, "size": n} for c, n in enumerate(record["cluster_sizes"])],
        key=artifact_key(dataset, "cluster-sizes"), description=f"Cluster sizes of run {run_id}.")
    scores = "" if record["scores"] is None else " | ".join(
        f"{k} {v:.4f}" for k, v in record["scores"].items())
    create_markdown_artifact(
        f"## fastmice run `{run_id}` ({record['kind']})\n\n"
        f"* dataset `{dataset}`: {record['n_samples']} samples, {record['n_views']} views, "
        f"batches {record['batches']}\n"
        f"* k = {record['n_clusters']}, {record['n_groups']} view groups: "
        f"{record['groups_computed']} computed, {record['groups_reused']} reused\n"
        f"* work: {record['work']}\n"
        f"* {record['seconds']:.1f} s; labels in `{record['labels_path']}`\n"
        + (f"* scores: {scores}\n" if scores else ""),
        key=artifact_key(dataset, "summary"), description=f"Summary of run {run_id}.")


@task(name="run-report", **TASK_OPTIONS)
def report_artifact(store_url: str, run_id: str, dataset: str) -> bool:
    """The run at a glance (:func:`pipeline.report.build_report` with ``full=False``) as a
    Prefect markdown artifact, its figures inline as SVG images; whether it was made.

    The run is finished and stored before this runs: a report that cannot be drawn is
    logged as a warning and does not fail the run (``fastmice report RUN`` draws it again).
    """
    # Imported here: matplotlib (0.3-0.6 s) loads only in the process that draws.
    from pipeline.report import build_report
    from pipeline.report_render import report_markdown

    try:
        report = build_report(open_store(store_url), run_id, full=False)
    except Exception as exc:  # the labels are stored: never fail a finished run for a figure
        get_run_logger().warning("run %s: no report artifact (%s: %s); `fastmice report %s` "
                                 "draws it again", run_id, type(exc).__name__, exc, run_id)
        return False
    more = (f"The full report adds the agreement between base clusterings and the figures "
            f"of the view groups and stages: `fastmice report {run_id}`.\n")
    create_markdown_artifact(report_markdown(report) + "\n" + more,
                             key=artifact_key(dataset, "report"),
                             description=f"Run {run_id} at a glance (`fastmice report {run_id}` "
                                         f"writes the full report, with the ensemble's "
                                         f"diagnostics, as one HTML file).")
    return True
