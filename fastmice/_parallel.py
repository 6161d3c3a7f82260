"""Threads over row blocks and over independent pieces of work, in a fixed order.

numpy's and scipy's heavy kernels (BLAS, sparse products, sorting) release the GIL, so
threads use the cores. Results come back in submission order and the blocks never depend on
the number of threads, so neither does any result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["BLOCK_ROWS", "map_blocks", "map_threads"]

#: Rows per block when a rows-by-something matrix is formed.
BLOCK_ROWS = 16384


def map_blocks(function: Callable[[slice], object], n_rows: int, n_jobs: int = 1,
               block: int = BLOCK_ROWS) -> list:
    """``[function(rows) for rows in row blocks]``, in ``n_jobs`` threads, in block order.

    Blocks do not depend on ``n_jobs``, so neither does the result.
    """
    blocks = [slice(s, min(s + block, n_rows)) for s in range(0, n_rows, block)]
    return map_threads(function, blocks, n_jobs)


def map_threads(function: Callable, items: Iterable, n_jobs: int) -> list:
    if n_jobs <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:  # numpy and BLAS release the GIL
        return list(pool.map(function, items))


