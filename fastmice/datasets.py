"""Synthetic multi-view data: :func:`make_multiview_blobs` and :func:`make_words_and_citations`
(defined in ``fastmice._synthetic``).

Reading data files is not the algorithm's job: the loaders (``.npz``, ``.mat``, one file per
view, a folder of named benchmarks) are in the application layer, :mod:`pipeline.ingest`.
"""

from fastmice._synthetic import make_multiview_blobs, make_words_and_citations

__all__ = ["make_multiview_blobs", "make_words_and_citations"]
