"""fastmice.datasets.make_multiview_blobs: shapes, determinism, informativeness, errors."""

import numpy as np
import pytest
from sklearn.cluster import KMeans

from fastmice.datasets import make_multiview_blobs
from fastmice.metrics import clustering_scores


def test_make_multiview_blobs_shapes_and_determinism():
    Xs, y = make_multiview_blobs(n_samples=101, n_clusters=4, random_state=3)
    assert [X.shape for X in Xs] == [(101, 20), (101, 30), (101, 40)]
    assert all(X.dtype == np.float64 and X.flags.c_contiguous for X in Xs)
    assert y.dtype == np.int64 and np.bincount(y).tolist() == [26, 25, 25, 25]
    Xs2, y2 = make_multiview_blobs(n_samples=101, n_clusters=4, random_state=3)
    assert np.array_equal(y, y2) and all(np.array_equal(a, b) for a, b in zip(Xs, Xs2, strict=True))
    Xs3, _ = make_multiview_blobs(n_samples=101, n_clusters=4, random_state=4)
    assert not np.allclose(Xs[0], Xs3[0])
    # With explicit noise, adding a view leaves the earlier views unchanged.
    a, _ = make_multiview_blobs(50, 2, 3, (5, 7), noise=1.0, random_state=0)
    b, _ = make_multiview_blobs(50, 3, 3, (5, 7, 9), noise=1.0, random_state=0)
    assert np.array_equal(a[1], b[1])


def test_make_multiview_blobs_float32_and_few_features():
    Xs, y = make_multiview_blobs(
        200, n_views=2, n_clusters=6, n_features=[3, 50], random_state=0, dtype=np.float32
    )
    assert [X.dtype for X in Xs] == [np.float32, np.float32]
    assert [X.shape for X in Xs] == [(200, 3), (200, 50)]
    assert np.isfinite(Xs[0]).all() and np.unique(y).size == 6


def test_make_multiview_blobs_views_differ_in_informativeness():
    Xs, y = make_multiview_blobs(n_samples=600, random_state=0)
    nmi = [
        clustering_scores(y, KMeans(5, n_init=3, random_state=0).fit_predict(X))["nmi"] for X in Xs
    ]
    assert max(nmi[:2]) > 0.95  # strong views
    assert nmi[2] < min(nmi[:2]) - 0.2  # the last view is the weak one
    concatenated = KMeans(5, n_init=3, random_state=0).fit_predict(np.hstack(Xs))
    assert clustering_scores(y, concatenated)["nmi"] > 0.95


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_samples": 0}, ValueError, "n_samples=0 must be a positive integer"),
        ({"n_views": 2.5}, ValueError, "n_views=2.5 must be a positive integer"),
        ({"n_samples": 3, "n_clusters": 4}, ValueError, "n_clusters=4 must be <= n_samples=3"),
        ({"n_views": 4, "n_features": (20, 30, 40)}, ValueError, r"4 positive ints.*one per view"),
        ({"n_features": 0}, ValueError, "n_features=0 must be a positive int"),
        ({"noise": (1.0, 2.0)}, ValueError, r"noise=\(1.0, 2.0\) must be a number >= 0 or 3"),
        ({"noise": -1.0}, ValueError, "noise=-1.0"),
        ({"separation": np.inf}, ValueError, "separation=inf must be a finite"),
        ({"dtype": np.int32}, ValueError, "dtype=int32 is not supported"),
        ({"random_state": -1}, ValueError, r"random_state=-1 must be in \[0, 2\*\*32\)"),
        ({"random_state": "seed"}, TypeError, "random_state must be None, an int"),
    ],
)
def test_make_multiview_blobs_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_multiview_blobs(**kwargs)
