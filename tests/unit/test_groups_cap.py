"""Fewer view groups at once: the cap holds, the labels do not move, a memory limit sets it."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from fastmice import EnsembleParams, FastMICE, _estimator, estimate_memory, groups_at_once
from fastmice import groups_within as library_groups_within
from fastmice._synthetic import make_multiview_blobs
from pipeline.resources import groups_within_memory

YTF = [944, 576, 512, 640]


@pytest.fixture(scope="module")
def views():
    Xs, _ = make_multiview_blobs(n_samples=1200, n_clusters=6, n_features=(12, 9, 7),
                                 random_state=0)
    return Xs


def _fit(Xs, n_jobs):
    return FastMICE(6, n_groups=6, n_anchors=100, random_state=3, n_jobs=n_jobs).fit(Xs)


def _groups_running(monkeypatch):
    """Wrap the group step to note the most groups that ran at the same time."""
    running, most, lock = [0], [0], threading.Lock()
    fit_group = _estimator._fit_group

    def counted(*args):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)  # overlap the groups if the scheduler lets them
        try:
            return fit_group(*args)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(_estimator, "_fit_group", counted)
    return most


def test_one_group_at_once_gives_the_labels_of_the_default(views, monkeypatch):
    default = _fit(views, 4)
    most = _groups_running(monkeypatch)
    with groups_at_once(1):
        capped = _fit(views, 4)
    assert most[0] == 1
    np.testing.assert_array_equal(capped.base_labels_, default.base_labels_)
    np.testing.assert_array_equal(capped.labels_, default.labels_)
    np.testing.assert_array_equal(capped.labels_, _fit(views, 1).labels_)
    assert len(np.unique(default.labels_)) == 6


def test_the_cap_is_this_threads_and_ends_with_the_block(views, monkeypatch):
    most = _groups_running(monkeypatch)
    with groups_at_once(2):
        _fit(views, 4)
    assert most[0] == 2  # 4 threads, 6 groups of 200 ms or more: two at a time
    most[0] = 0
    _fit(views, 4)
    assert most[0] > 2  # the cap is gone: one group a thread


@pytest.mark.parametrize("cap", [0, -1, 1.5, True, "2"])
def test_a_cap_that_is_not_a_positive_int_is_refused(cap):
    with pytest.raises(ValueError, match="groups at once must be None or an int >= 1"), \
            groups_at_once(cap):
        pass


def test_a_memory_limit_becomes_a_number_of_groups():
    params, n = EnsembleParams(400), 400_000
    one = estimate_memory(params, n, YTF, n_workers=1, views_in_memory=True).total
    per_group = _estimator.further_group_bytes(n)
    caps = [library_groups_within(one + extra, params, n, YTF)
            for extra in (-per_group, 0, per_group - 1, per_group, 5 * per_group)]
    assert caps == [1, 1, 1, 2, 6]
    # The pipeline reads its views from disk (more groups fit the same limit), and runs
    # at most its workers.
    limit = one + 3 * per_group
    wide = EnsembleParams(400, n_jobs=16)
    on_disk = library_groups_within(limit, wide, n, YTF, views_in_memory=False)
    assert on_disk > library_groups_within(limit, wide, n, YTF) == 4
    assert groups_within_memory(wide, n, YTF, limit=limit) == min(16, on_disk)
    assert groups_within_memory(wide, n, YTF, limit=2**50) == 16
    assert groups_within_memory(params, n, YTF, limit=2**50) == 2  # n_jobs None: 2 workers
