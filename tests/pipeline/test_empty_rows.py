"""The all-zero rows of a batch's views (pipeline.empty_rows): the library's masks, each
view scanned once per process however many group tasks ask, only the group's views."""

from __future__ import annotations

import threading
import uuid

import numpy as np

import fastmice
from pipeline.empty_rows import group_empty_rows


class _Counted:
    """A dense view that counts the rows read from it."""

    def __init__(self, X: np.ndarray) -> None:
        self.X, self.rows_read = X, 0
        self.shape, self.dtype, self.ndim = X.shape, X.dtype, 2

    def __getitem__(self, key):
        block = self.X[key]
        self.rows_read += len(block)
        return block


def _views(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    Xs = [rng.random((500, 6)), rng.random((500, 4)), rng.random((500, 3))]
    for X, share in zip(Xs, (0.1, 0.4, 0.0), strict=True):
        X[rng.random(500) < share] = 0.0
    return Xs


def test_the_library_masks_of_the_group_views_each_read_once():
    Xs = _views(0)
    counted = [_Counted(X) for X in Xs]
    batch = [uuid.uuid4().hex]  # a fingerprint of its own: nothing kept from another test
    expected = fastmice.missing_rows(Xs, "best")
    first = group_empty_rows(batch, counted, [0, 2], "best")
    assert first[1] is None and all(np.array_equal(first[v], expected[v]) for v in (0, 2))
    assert [c.rows_read for c in counted] == [500, 0, 500]
    again = group_empty_rows(batch, counted, [2, 1, 0], "best")
    assert all(np.array_equal(again[v], expected[v]) for v in range(3))
    assert [c.rows_read for c in counted] == [500, 500, 500]  # only view 1 was new
    other = [uuid.uuid4().hex]  # other data: read anew
    group_empty_rows(other, counted, [0], "best")
    assert counted[0].rows_read == 1000
    assert group_empty_rows(batch, counted, [0, 1], "paper") is None


def test_tasks_asking_at_once_read_a_view_once():
    counted = [_Counted(X) for X in _views(1)]
    batch = [uuid.uuid4().hex]
    results, start = [], threading.Barrier(4)

    def ask() -> None:
        start.wait()
        results.append(group_empty_rows(batch, counted, [0, 1, 2], "best"))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [c.rows_read for c in counted] == [500, 500, 500]
    assert all(np.array_equal(r[v], results[0][v]) for r in results for v in range(3))
