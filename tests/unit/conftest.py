import numpy as np
import pytest


def blobs(n_samples=300, n_clusters=3, dims=(5, 8), seed=0, spread=0.5):
    """Well-separated multi-view blobs: every view carries the clusters."""
    rng = np.random.default_rng(seed)
    y = np.arange(n_samples) % n_clusters
    Xs = []
    for d in dims:
        centers = rng.normal(scale=4.0, size=(n_clusters, d))
        Xs.append(centers[y] + rng.normal(scale=spread, size=(n_samples, d)))
    return Xs, y


@pytest.fixture
def small_views():
    return blobs()


@pytest.fixture
def make_blobs():
    return blobs
