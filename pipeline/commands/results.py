"""``report``, ``export`` and ``label``: what a run gives back, each command one call of this
module (no Prefect; nothing written to the store but a rebuilt labels table)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.commands.errors import RequestError, checked_out_file
from pipeline.commands.store import readable_run
from pipeline.export import check_export_path, export_run, write_labels
from pipeline.ingest import read_samples
from pipeline.predict import check_new_views, load_model, predict_labels
from storage import labels_table, open_store, validate_name

__all__ = ["PRINT_LIMIT", "export", "label", "report"]

#: How many labels ``label`` returns to print without ``out`` before it says to use it.
PRINT_LIMIT = 100_000


def _report_path(path: str | None, run_id: str) -> Path:
    return checked_out_file(Path(path) if path is not None else Path(f"{run_id}.html"),
                            (".html", ".htm"), "an .html file name")


def report(store_url: str, run_id: str, out: str | None = None,
           max_points: int | None = None) -> dict[str, Any]:
    """Write run ``run_id``'s report as one HTML file that opens offline (default
    ``./RUN.html``; at most ``max_points`` samples on its map): where, and its size."""
    # Imported here so that the other commands do not pay for importing matplotlib.
    from pipeline.report import MAX_MAP_POINTS, write_report

    validate_name(run_id, "run id")
    path = _report_path(out, run_id)
    max_points = MAX_MAP_POINTS if max_points is None else max_points
    if max_points < 2:
        raise RequestError(f"--max-points {max_points} must be >= 2.")
    store = open_store(store_url)
    readable_run(store, run_id)
    path = write_report(store, run_id, path, max_points=max_points)
    return {"run_id": run_id, "report_path": str(path), "bytes": path.stat().st_size,
            "store": store.url}


def _export_path(path: str | None) -> Any:
    try:
        return None if path is None else check_export_path(path)
    except ValueError as exc:
        raise RequestError(str(exc)) from None


def export(store_url: str, run_id: str, out: str) -> dict[str, Any]:
    """Write run ``run_id``'s labels with their sample ids to ``out``: what was written."""
    _export_path(out)
    return export_run(open_store(store_url), run_id, out)


def label(store_url: str, run_id: str, data: Sequence[str], *, id_column: str | None = None,
          metric: Any = None, n_jobs: int | None = None,
          out: str | None = None) -> dict[str, Any]:
    """Label the samples of ``data`` with run ``run_id``'s stored ensemble: the cluster
    sizes, and the labels written to ``out`` (``labels_path``) or, without it, returned
    (``sample_ids``, ``labels``; at most :data:`PRINT_LIMIT`)."""
    out_path = _export_path(out)
    store = open_store(store_url)
    model = load_model(store, run_id)
    Xs, _, ids = read_samples(data, id_column=id_column)
    check_new_views(model, Xs, metric)
    labels = predict_labels(model, Xs, n_jobs)
    if ids is None:
        ids = np.arange(labels.shape[0], dtype=np.int64)
    sizes = np.bincount(labels, minlength=model.n_clusters).tolist()
    result: dict[str, Any] = {"run_id": run_id, "n_samples": int(labels.shape[0]),
                              "cluster_sizes": sizes}
    if out_path is not None:
        table = labels_table(ids, {"label": labels}, {"run_id": run_id, "labelled": "new"})
        result["labels_path"] = str(write_labels(table, out_path))
    elif labels.shape[0] > PRINT_LIMIT:
        raise RequestError(f"{labels.shape[0]} samples: pass --out FILE to write their "
                           f"labels (at most {PRINT_LIMIT} are printed).")
    else:
        result.update(sample_ids=ids.tolist(), labels=labels.tolist())
    return result
