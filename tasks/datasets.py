"""Task registering data files as a dataset batch (for deployed flows such as an inbox)."""

from __future__ import annotations

from typing import Any

from prefect import task

from pipeline.ingest import read_data, register_batch
from storage import open_store
from tasks._options import TASK_OPTIONS

__all__ = ["register_data"]


@task(name="register-data", **TASK_OPTIONS)
def register_data(store_url: str, dataset: str, paths: list[str], mode: str = "append") -> dict:
    """Read data files and store them as a new dataset or batch (pipeline.ingest).

    Parameters
    ----------
    store_url : str
    dataset : str
        Dataset name.
    paths : list of str
        As for :func:`pipeline.ingest.read_data`.
    mode : {"append", "create"}, default="append"
        ``"append"`` adds a batch to an existing dataset; ``"create"`` creates the dataset.
        Both are idempotent (data already registered are not stored twice).

    Returns
    -------
    info : dict
        ``dataset``, ``written`` (whether a batch was stored), ``n_batches``, ``n_samples``,
        ``fingerprint``.
    """
    Xs, labels = read_data(paths)
    manifest, written = register_batch(open_store(store_url), dataset, Xs, labels, mode=mode)
    return _info(manifest, written)


def _info(manifest: dict[str, Any], written: bool) -> dict[str, Any]:
    return {"dataset": manifest["name"], "written": written,
            "n_batches": len(manifest["batches"]), "n_samples": manifest["n_samples"],
            "fingerprint": manifest["fingerprint"]}
