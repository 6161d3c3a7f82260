"""Every numerical step runs on one BLAS thread, whichever Python thread runs it."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from threadpoolctl import threadpool_info

from fastmice._blas import single_threaded_blas


def blas_thread_counts() -> list[int]:
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def counts_inside() -> list[int]:
    with single_threaded_blas():
        return blas_thread_counts()


def test_one_blas_thread_in_worker_threads_after_the_main_thread_used_it():
    before = blas_thread_counts()
    if not before or max(before) < 2:
        pytest.skip(f"BLAS runs on {before} thread(s) already: nothing to limit")
    assert set(counts_inside()) == {1}  # the main thread first, as FastMICE.fit's consensus
    with ThreadPoolExecutor(max_workers=2) as pool:  # then worker threads, as n_jobs=2
        inside = list(pool.map(lambda _: counts_inside(), range(6)))
    assert all(set(counts) == {1} for counts in inside), inside
    assert set(counts_inside()) == {1}
    assert blas_thread_counts() == before
