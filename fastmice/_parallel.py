"""Threads over row blocks and over independent pieces of work, in a fixed order.

numpy's and scipy's heavy kernels (BLAS, sparse products, sorting) release the GIL, so
threads use the cores. Results come back in submission order and the blocks never depend on
the number of threads, so neither does any result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np

__all__ = ["BLOCK_ROWS", "by_column_parts", "map_blocks", "map_threads"]

#: Rows per block when a rows-by-something matrix is formed: small enough for a block of
#: scores against some hundreds of centres to stay in cache (2,048 rows x 600 float32 is
#: 4.9 MB; 16,384 rows, 39 MB, went to memory and back): at 400k, k = 400, four view groups
#: two at a time took 10.2-10.4 s against 11.9-13.5 s with 16,384, two one after the other
#: 8.3-8.5 s against 8.8-9.6 s.
BLOCK_ROWS = 2048


def map_blocks(function: Callable[[slice], object], n_rows: int, n_jobs: int = 1,
               block: int = BLOCK_ROWS) -> list:
    """``[function(rows) for rows in row blocks]``, in ``n_jobs`` threads, in block order.

    Blocks do not depend on ``n_jobs``, so neither does the result.
    """
    blocks = [slice(s, min(s + block, n_rows)) for s in range(0, n_rows, block)]
    return map_threads(function, blocks, n_jobs)


def map_threads(function: Callable, items: Iterable, n_jobs: int) -> list:
    """``[function(item) for item in items]``, in ``n_jobs`` threads, in item order."""
    if n_jobs <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:  # numpy and BLAS release the GIL
        return list(pool.map(function, items))


def by_column_parts(function: Callable[[slice], np.ndarray], n_columns: int,
                    n_jobs: int = 1) -> np.ndarray:
    """``function(slice(None))``, as ``n_jobs`` slices of its result's columns in threads.

    For products of a sparse matrix with a dense one, sliced by the dense one's columns:
    scipy computes every entry the same way whatever the number of columns (checked in
    ``tests/unit/test_scale_paths.py``), so the result is the same as one product's.
    """
    if n_jobs <= 1 or n_columns < 2:
        return function(slice(None))
    bounds = np.linspace(0, n_columns, min(n_jobs, n_columns) + 1).astype(int)
    parts = map_threads(function, [slice(a, b) for a, b in pairwise(bounds)],
                        n_jobs)
    return np.hstack(parts)
