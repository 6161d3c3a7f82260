"""Scheduled reclustering of an inbox of batch files, and the serve process for it.

An *inbox* is a folder where producers drop batch files: ``.npz`` in the layout of
``../shared/datasets/INDEX.md`` (``view0 ... view{V-1}``, optional ``labels``). A producer
writes under a hidden name (``.batch-017.npz.tmp``) and renames, so that a half-written
file is never picked up. Each run of :func:`recluster_inbox`:

1. registers every ``*.npz`` of the inbox, in name order, as the next batch of the dataset
   (the first file creates it) with :func:`tasks.datasets.register_data`, which is
   idempotent by content: a file whose views equal a stored batch's is not stored again;
2. moves each file to ``inbox/processed/`` once its batch is stored (a file that cannot be
   read or does not fit the dataset goes to ``inbox/rejected/`` with a ``.error.txt``);
3. brings the labels up to date: :func:`flows.pipeline.cluster_flow` when the dataset has
   no run yet, :func:`flows.pipeline.recluster_flow` when its latest run misses batches,
   otherwise nothing (the latest run's summary is returned);
4. with ``keep_runs=N`` (``--keep-runs N`` of ``cli.serve``), keeps the dataset's N latest
   runs and removes the files no kept run needs (:mod:`pipeline.housekeeping`), so that a
   store reclustered on a schedule does not grow forever.

Every step can be repeated, so a run killed anywhere is safe: a file left in the inbox is
recognised by its content, and a dataset whose latest run misses batches is reclustered by
the next run even if the inbox is empty.

Serve the two deployments (one long-lived process; PREFECT.md section 4) with
:func:`serve_deployments`, from the command line::

    export PREFECT_API_URL=http://127.0.0.1:4200/api      # infra/local_server.sh
    python -m cli.serve --inbox /data/inbox --dataset incoming --k 10 \\
        --store /data/store --cron "*/30 * * * *"

``fastmice-recluster-inbox/inbox-recluster`` runs on the schedule, one run at a time;
``fastmice-cluster/cluster-on-demand`` runs when asked
(``prefect deployment run fastmice-cluster/cluster-on-demand -p dataset=NAME -p n_clusters=K``).
"""

from __future__ import annotations

import datetime as _dt
import shutil
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from flows.pipeline import cluster_flow, recluster_flow
from flows.runners import task_runner
from flows.serving import install_one_line_errors, serve_supervised
from pipeline.housekeeping import collect_garbage, retention
from pipeline.params import PARAM_NAMES
from pipeline.runs import list_runs, run_summary
from storage import ArtifactIntegrityError, DatasetStore, open_store
from tasks.datasets import register_data

__all__ = ["CLUSTER_DEPLOYMENT", "INBOX_DEPLOYMENT", "recluster_inbox", "serve_deployments"]

#: Deployment names, as ``<flow name>/<deployment name>``.
INBOX_DEPLOYMENT = "fastmice-recluster-inbox/inbox-recluster"
CLUSTER_DEPLOYMENT = "fastmice-cluster/cluster-on-demand"

PROCESSED, REJECTED = "processed", "rejected"


def _pending(inbox: Path) -> list[Path]:
    """The batch files waiting in ``inbox``, in name order (hidden files are being written)."""
    return sorted(p for p in inbox.glob("*.npz") if p.is_file() and not p.name.startswith("."))


def _move(path: Path, folder: Path) -> Path | None:
    """Move ``path`` into ``folder``; a name already there gets a UTC time stamp. None if
    ``path`` is gone: a run of a serve process killed meanwhile (still working) moved it."""
    folder.mkdir(exist_ok=True)
    target = folder / path.name
    if target.exists():
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = folder / f"{path.stem}.{stamp}{path.suffix}"
    try:
        shutil.move(path, target)
    except FileNotFoundError:
        if path.exists():
            raise
        return None
    return target


def _check_bound(**parameters: Any) -> None:
    """Reject a ``{{ $VAR }}`` that ``prefect deploy`` left in place (the variable was unset)."""
    for name, value in parameters.items():
        if isinstance(value, str) and "{{" in value:
            raise ValueError(f"{name}={value!r} is an unresolved prefect.yaml placeholder; "
                             f"export the variable and run `prefect deploy` again.")


def _ingest(folder: Path, store: Any, dataset: str, logger: Any) -> dict[str, list[str]]:
    """Register each pending file as the next batch; file it under processed/ or rejected/."""
    datasets = DatasetStore(store)
    files: dict[str, list[str]] = {"ingested": [], "duplicates": [], "rejected": []}
    for path in _pending(folder):
        mode = "append" if datasets.exists(dataset) else "create"
        try:
            info = register_data(store.url, dataset, [str(path)], mode=mode)
        except ArtifactIntegrityError:
            raise  # the store is damaged, not the file
        except (ValueError, TypeError) as exc:
            moved = _move(path, folder / REJECTED)
            if moved is None:
                continue
            moved.with_name(moved.name + ".error.txt").write_text(f"{exc}\n")
            logger.error("rejected %s: %s", path.name, exc)
            files["rejected"].append(path.name)
            continue
        _move(path, folder / PROCESSED)  # only once its batch is stored
        files["ingested" if info["written"] else "duplicates"].append(path.name)
        logger.info("%s %s: dataset %s has %d samples in %d batches", path.name,
                    "stored" if info["written"] else "was already stored", dataset,
                    info["n_samples"], info["n_batches"])
    return files


@flow(name="fastmice-recluster-inbox")
def recluster_inbox(inbox: str, dataset: str, n_clusters: int | str | None = None,
                    store_url: str | None = None, n_groups: int | None = None,
                    n_anchors: int | None = None, n_neighbors: int | None = None,
                    feature_ratio: list[float] | None = None,
                    base_clusters: list[float] | None = None,
                    metric: str | list[str] | None = None, random_state: int | None = None,
                    n_jobs: int | None = None, dask_address: str | None = None,
                    keep_runs: int | None = None,
                    mode: str | None = None) -> dict[str, Any]:
    """Register the inbox's new batch files, then cluster or recluster the dataset.

    Calls :func:`tasks.datasets.register_data` per file, then
    :func:`flows.pipeline.cluster_flow` or :func:`flows.pipeline.recluster_flow` (or
    neither), on :func:`flows.runners.task_runner` ``(n_jobs, dask_address)``; with
    ``keep_runs``, a retention after it. Reads and writes the dataset record, the run
    records and the inbox folders.

    Parameters
    ----------
    inbox : str
        Folder of incoming ``.npz`` batch files.
    dataset : str
        Dataset name in the store.
    n_clusters : int or "auto", optional
        k of the first run (``"auto"``: chosen from the data); required until the dataset
        has a run (later runs reuse the latest run's parameters).
    store_url : str, optional
        Default: ``$FASTMICE_STORE`` or ``./.fastmice``.
    n_groups, n_anchors, n_neighbors, feature_ratio, base_clusters, metric, random_state, mode
        The other parameters of the first run (see :func:`flows.pipeline.cluster_flow`).
    n_jobs : int, optional
        Task-runner workers of every run (see :func:`flows.pipeline.cluster_flow`).
    dask_address : str, optional
        ``tcp://host:8786`` of a Dask scheduler to fan the view groups out on (default, or
        ``""``: the pipeline's thread runner).
    keep_runs : int, optional
        Retention: after the run, remove the dataset's runs but its ``keep_runs`` latest and
        every file no kept run or dataset needs (:func:`pipeline.housekeeping.collect_garbage`;
        skipped, and said, while another run writes to the store). Default: keep everything.

    Returns
    -------
    summary : dict
        ``dataset``, ``action`` (``"cluster"``, ``"recluster"`` or ``"none"``), the file
        names ``ingested``, ``duplicates`` (already stored) and ``rejected``, and ``run``:
        the run summary of the new run, or of the latest one when nothing changed (``None``
        while the dataset does not exist); with ``keep_runs``, ``housekeeping``: what the
        retention removed (:class:`pipeline.housekeeping.Collection`).

    Raises
    ------
    ValueError
        If the dataset has no run yet and ``n_clusters`` is not given, or a parameter is
        an unresolved ``{{ $VAR }}`` placeholder of ``infra/prefect.yaml``.
    FileNotFoundError
        If ``inbox`` is not a directory.
    """
    given = {name: value for name, value in locals().items() if name in PARAM_NAMES}
    install_one_line_errors()  # a full disk or a lost server: one line, no traceback
    _check_bound(inbox=inbox, dataset=dataset, store_url=store_url, dask_address=dask_address)
    if keep_runs is not None:
        retention([], keep_runs)  # refuse a bad value before anything is done
    logger = get_run_logger()
    folder = Path(inbox)
    if not folder.is_dir():
        raise FileNotFoundError(f"inbox={inbox!r} is not a directory.")
    store = open_store(store_url)
    datasets = DatasetStore(store)
    runs = list_runs(store, dataset) if datasets.exists(dataset) else []
    if not runs and n_clusters is None:
        raise ValueError(f"n_clusters is required: dataset {dataset!r} has no run yet in "
                         f"store {store.url}.")
    result: dict[str, Any] = {"dataset": dataset, "action": "none",
                              **_ingest(folder, store, dataset, logger), "run": None}
    if not datasets.exists(dataset):
        logger.info("dataset %s does not exist yet and the inbox has no batch for it", dataset)
        return result
    result.update(_bring_up_to_date(store, dataset, runs, given, n_jobs, dask_address, logger))
    if keep_runs is not None:
        collection = collect_garbage(store, keep_last=keep_runs, dataset=dataset)
        result["housekeeping"] = collection.to_dict()
        logger.info("retention of %d runs: %d runs and %d files removed (%d bytes)%s",
                    keep_runs, len(collection.runs), len(collection.artifacts), collection.freed,
                    "" if collection.done else f"; skipped: {'; '.join(collection.busy)} writes")
    return result


def _bring_up_to_date(store: Any, dataset: str, runs: list[dict[str, Any]],
                      given: dict[str, Any], n_jobs: int | None, dask_address: str | None,
                      logger: Any) -> dict[str, Any]:
    """Cluster the dataset (no run yet), recluster it (its latest run misses batches) or
    nothing; ``{"action", "run"}``."""
    datasets = DatasetStore(store)
    runner = task_runner(n_jobs, dask_address or None)
    if not runs:
        return {"action": "cluster", "run": cluster_flow.with_options(task_runner=runner)(
            dataset, store_url=store.url, **given)}
    if runs[-1]["dataset_fingerprint"] != datasets.manifest(dataset)["fingerprint"]:
        return {"action": "recluster", "run": recluster_flow.with_options(task_runner=runner)(
            dataset, store_url=store.url, n_jobs=n_jobs)}
    logger.info("nothing new: run %s covers every batch of %s", runs[-1]["run_id"], dataset)
    return {"action": "none", "run": run_summary(runs[-1])}


def serve_deployments(inbox: str | Path, dataset: str, store_url: str,
                      parameters: dict[str, Any], schedule: dict[str, Any], api_url: str,
                      grace: float = 300.0) -> int:
    """Serve both deployments from this process until interrupted (PREFECT.md section 4),
    through faults (:func:`flows.serving.serve_supervised`); the exit status.

    Parameters
    ----------
    inbox : path-like
        The inbox folder (created if missing).
    dataset, store_url : str
    parameters : dict
        Further parameters bound into the inbox deployment: ``dask_address`` and those of
        :func:`recluster_inbox` (the ensemble's, for its first run).
    schedule : dict
        ``{"cron": "*/30 * * * *"}`` or ``{"interval": seconds}``.
    api_url : str
        The Prefect API that schedules the runs.
    grace : float, default=300
        Seconds to wait for a server that does not answer before giving up (status 3).
    """
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.deployments.runner import EntrypointType

    inbox = Path(inbox).resolve()
    inbox.mkdir(parents=True, exist_ok=True)
    bound = {"inbox": str(inbox), "dataset": dataset, "store_url": store_url, **parameters}

    def build() -> list[Any]:
        inbox_deployment = recluster_inbox.to_deployment(
            name=INBOX_DEPLOYMENT.split("/")[1], parameters=bound,
            concurrency_limit=ConcurrencyLimitConfig(  # one at a time; one due meanwhile
                limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW),  # is dropped
            description=f"Register new batch files of {inbox} into dataset {dataset!r} "
                        f"and recluster it.",
            tags=["fastmice"], entrypoint_type=EntrypointType.MODULE_PATH, **schedule)
        cluster_deployment = cluster_flow.to_deployment(
            name=CLUSTER_DEPLOYMENT.split("/")[1], parameters={"store_url": store_url},
            description="Cluster a registered dataset on demand (-p dataset=NAME -p "
                        "n_clusters=K or auto).",
            tags=["fastmice"], entrypoint_type=EntrypointType.MODULE_PATH)
        return [inbox_deployment, cluster_deployment]

    return serve_supervised(build, [INBOX_DEPLOYMENT, CLUSTER_DEPLOYMENT], api_url, grace)
