"""Ingestion: read user data files into validated views, and register them as dataset batches.

Every loader returns ``(Xs, labels)``, the views validated by :func:`fastmice.check_views`
(the one view validator); see :mod:`pipeline.ingest._common` for the ``sparse`` option.

* :func:`load_npz` -- one ``.npz`` with ``view0 ... view{V-1}`` and optional ``labels``
  (the layout of the shared benchmarks); :func:`load_dataset` / :func:`available_datasets`
  -- the same, by name, from a folder of such files;
* :func:`load_mat` -- the ``.mat`` layouts common among multi-view benchmarks;
* :func:`load_views` -- one file per view (``.npy``, ``.npz``, ``.parquet``, ``.csv``), or a
  directory of ``view*.npy`` / ``view*.npz`` files (what :func:`save_views_dir` writes);
* :func:`read_samples` -- the same, with the sample ids of a named id column of
  ``.parquet``/``.csv`` views (:mod:`pipeline.ingest.ids`, which aligns views by id);
* :func:`read_data` -- whichever of these a list of paths calls for (the command line's
  DATA), :func:`default_dataset_name`, and :func:`register_batch` into a
  :class:`storage.DatasetStore`.
"""

from pipeline.ingest._common import DENSITY_THRESHOLD
from pipeline.ingest.matlab import load_mat
from pipeline.ingest.npz import available_datasets, load_dataset, load_npz
from pipeline.ingest.read import (
    VIEW_SUFFIXES,
    default_dataset_name,
    read_data,
    read_samples,
    register_batch,
)
from pipeline.ingest.views import load_views, save_views_dir

__all__ = [
    "DENSITY_THRESHOLD",
    "VIEW_SUFFIXES",
    "available_datasets",
    "default_dataset_name",
    "load_dataset",
    "load_mat",
    "load_npz",
    "load_views",
    "read_data",
    "read_samples",
    "register_batch",
    "save_views_dir",
]
