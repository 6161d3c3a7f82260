"""Synthetic multi-view data: :func:`make_multiview_blobs` (defined in ``fastmice._synthetic``).

Reading data files is not the algorithm's job: the loaders (``.npz``, ``.mat``, one file per
view, a folder of named benchmarks) are in the application layer, :mod:`pipeline.ingest`.

``load_dataset`` and ``available_datasets`` are still answered here, deprecated, for scripts
written before the move (``benchmarks/quality.py``): they forward to :mod:`pipeline.ingest`,
which they import only when called, so ``import fastmice.datasets`` loads nothing of the
pipeline. Their default folder, ``$FASTMICE_DATASETS`` or ``../shared/datasets`` beside the
checkout, is a benchmark convenience that ``pipeline.ingest`` does not have.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastmice._synthetic import make_multiview_blobs

__all__ = ["make_multiview_blobs"]


def _benchmark_root(root: str | os.PathLike | None) -> Path:
    if root is not None:
        return Path(root)
    env = os.environ.get("FASTMICE_DATASETS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "datasets"


def available_datasets(root: str | os.PathLike | None = None) -> list[str]:
    """Deprecated: :func:`pipeline.ingest.available_datasets` (see the module docstring)."""
    from pipeline import ingest  # deprecated forward, imported on call only

    return ingest.available_datasets(_benchmark_root(root))


def load_dataset(name: str, root: str | os.PathLike | None = None, **options: Any):
    """Deprecated: :func:`pipeline.ingest.load_dataset` (see the module docstring)."""
    from pipeline import ingest  # deprecated forward, imported on call only

    return ingest.load_dataset(name, _benchmark_root(root), **options)
