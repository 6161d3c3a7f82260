"""Synthetic multi-view data: :func:`make_multiview_blobs` and
:func:`make_words_and_citations`, for examples, tests and benchmarks."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from numpy.typing import DTypeLike

from fastmice._params import resolve_seed

__all__ = ["make_multiview_blobs", "make_words_and_citations"]



def _seed_sequence(random_state: object) -> np.random.SeedSequence:
    """An int seeds the sequence as it is; anything else gives :func:`resolve_seed`'s seed."""
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    seed = resolve_seed(random_state)  # checks every kind of random_state the same way
    return np.random.SeedSequence(int(random_state) if isinstance(random_state, int | np.integer)
                                  else seed)


def make_multiview_blobs(
    n_samples: int = 1000,
    n_views: int = 3,
    n_clusters: int = 5,
    n_features: int | Sequence[int] | None = None,
    *,
    noise: float | Sequence[float] | None = None,
    separation: float = 6.0,
    random_state: int | np.random.Generator | np.random.RandomState | None = None,
    dtype: DTypeLike = np.float64,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Generate multi-view Gaussian blobs whose views differ in informativeness.

    Every view sees the same clusters, each through its own random geometry. In view
    ``v`` with ``d_v`` features the ``n_clusters`` centres lie in a random
    ``min(n_clusters, d_v)``-dimensional subspace, at pairwise distance ``separation``
    (exactly, as corners of a regular simplex, when ``d_v >= n_clusters``; on average,
    as Gaussian draws, otherwise). A sample is its centre plus Gaussian noise of
    standard deviation ``noise[v]`` along each axis of that subspace, plus
    ``0.1 * noise[v]`` on every feature, plus a random per-view offset. By default the
    last view is twice as noisy as the others: the weaker view.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples; cluster sizes differ by at most one.
    n_views : int, default=3
        Number of views.
    n_clusters : int, default=5
        Number of clusters (``1 <= n_clusters <= n_samples``).
    n_features : int or sequence of int, optional
        Features per view (one int for all views, or one per view). Default:
        ``10 * (v + 2)`` for view ``v``, i.e. ``(20, 30, 40)`` for three views.
    noise : float or sequence of float, optional
        Noise standard deviation per view (one float for all, or one per view), in the
        units of ``separation``. Default: 1.0 for every view but the last, 2.0 for the
        last (when ``n_views > 1``).
    separation : float, default=6.0
        Distance between cluster centres. With the default noise, two clusters overlap
        by ``Phi(-separation / (2 * noise))``: 0.13% in the strong views, 6.7% in the
        weak one.
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None
        Seed. The same value gives the same data for the same arguments. View ``v``
        depends only on the seed, ``n_samples``, ``n_clusters`` and its own
        ``n_features[v]`` and ``noise[v]``: adding a view with explicit ``noise`` leaves
        the earlier views unchanged.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of the views. ``float32`` data are generated in ``float32`` (not rounded
        from ``float64``), so they differ from the ``float64`` data of the same seed.

    Returns
    -------
    Xs : list of ndarray, each of shape (n_samples, n_features[v])
        The views, C-contiguous, of ``dtype``.
    y : ndarray of shape (n_samples,)
        Cluster labels ``0..n_clusters-1``, ``int64``.

    Raises
    ------
    ValueError
        For a non-positive count, ``n_clusters > n_samples``, a ``n_features`` or
        ``noise`` sequence whose length is not ``n_views``, negative noise, or an
        unsupported dtype.

    Notes
    -----
    Memory is the output plus O(n_samples * n_clusters): the per-feature noise is drawn
    in place and the structured part is added in row chunks. Four views of
    100,000 x (944, 576, 512, 640) in ``float32`` take 1.07 GB and about 7 s (2 busy cores).

    Examples
    --------
    >>> from fastmice.datasets import make_multiview_blobs
    >>> Xs, y = make_multiview_blobs(n_samples=60, n_clusters=3, random_state=0)
    >>> [X.shape for X in Xs], y.shape
    ([(60, 20), (60, 30), (60, 40)], (60,))
    """
    for pname, value in (("n_samples", n_samples), ("n_views", n_views),
                         ("n_clusters", n_clusters)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{pname}={value!r} must be a positive integer.")
    if n_clusters > n_samples:
        raise ValueError(f"n_clusters={n_clusters} must be <= n_samples={n_samples}.")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype={dtype} is not supported; expected float32 or float64.")
    if not np.isfinite(separation) or separation < 0:
        raise ValueError(f"separation={separation!r} must be a finite number >= 0.")
    dims, sigmas = _view_dims(n_features, n_views), _view_noise(noise, n_views)

    labels_seq, *view_seqs = _seed_sequence(random_state).spawn(n_views + 1)
    y = np.arange(n_samples, dtype=np.int64) % n_clusters
    np.random.default_rng(labels_seq).shuffle(y)
    chunk = max(1, 2**22 // max(dims))  # ~16-32 MB of structured signal per chunk
    Xs = [_blob_view(np.random.default_rng(seq), y, n_clusters, d, sigma, separation, dtype, chunk)
          for d, sigma, seq in zip(dims, sigmas, view_seqs, strict=True)]
    return Xs, y


def _view_dims(n_features: int | Sequence[int] | None, n_views: int) -> list[int]:
    if n_features is None:
        dims = [10 * (v + 2) for v in range(n_views)]
    elif isinstance(n_features, int | np.integer):
        dims = [int(n_features)] * n_views
    else:
        dims = [int(d) for d in n_features]
    if len(dims) != n_views or min(dims) < 1:
        raise ValueError(
            f"n_features={n_features!r} must be a positive int or {n_views} positive ints "
            f"(one per view, n_views={n_views})."
        )
    return dims


def _view_noise(noise: float | Sequence[float] | None, n_views: int) -> list[float]:
    if noise is None:
        sigmas = [1.0] * n_views
        if n_views > 1:
            sigmas[-1] = 2.0
    elif isinstance(noise, int | float | np.number):
        sigmas = [float(noise)] * n_views
    else:
        sigmas = [float(s) for s in noise]
    if len(sigmas) != n_views or not all(math.isfinite(s) and s >= 0 for s in sigmas):
        raise ValueError(
            f"noise={noise!r} must be a number >= 0 or {n_views} of them (one per view)."
        )
    return sigmas


def _blob_view(rng: np.random.Generator, y: np.ndarray, n_clusters: int, d: int, sigma: float,
               separation: float, dtype: np.dtype, chunk: int) -> np.ndarray:
    """One view of :func:`make_multiview_blobs` (its draws, in its order, from ``rng``)."""
    n_samples = y.shape[0]
    r = min(n_clusters, d)
    if r == n_clusters:
        centres = np.eye(n_clusters) * (separation / math.sqrt(2.0))
    else:
        centres = rng.standard_normal((n_clusters, r)) * (separation / math.sqrt(2.0 * r))
    basis, _ = np.linalg.qr(rng.standard_normal((d, r)))  # (d, r), orthonormal columns
    offset = rng.standard_normal(d)
    latent = centres[y] + sigma * rng.standard_normal((n_samples, r))  # (n, r)
    X = np.empty((n_samples, d), dtype=dtype)
    rng.standard_normal(dtype=dtype, out=X)
    X *= dtype.type(0.1 * sigma)
    basis_t = basis.T.astype(dtype)
    offset = offset.astype(dtype)
    for start in range(0, n_samples, chunk):
        stop = min(start + chunk, n_samples)
        X[start:stop] += latent[start:stop].astype(dtype) @ basis_t
        X[start:stop] += offset
    return X


def make_words_and_citations(n_samples: int = 600, n_classes: int = 5, *, vocabulary: int = 400,
                             words: int = 20, topic_share: float = 0.45,
                             empty_share: float = 0.6, random_state: object = None
                             ) -> tuple[list[sp.csr_matrix], np.ndarray]:
    """A word view and two copies of a sparse citation view (a test of empty rows).

    Each sample draws ``words`` words from its class's topic (share ``topic_share``) mixed
    with a background shared by all; a share ``empty_share`` of the samples cite nothing,
    every other one cites one or two samples of its own class.

    Returns
    -------
    Xs : list of 3 csr_matrix
        Word counts (n_samples, vocabulary), then the citation view (n_samples, n_samples)
        twice.
    y : ndarray of shape (n_samples,)
    """
    rng = np.random.default_rng(_seed_sequence(random_state))
    y = rng.permutation(np.arange(n_samples) % n_classes)
    topics = rng.dirichlet(np.full(vocabulary, 0.05), size=n_classes)
    background = rng.dirichlet(np.ones(vocabulary))
    mix = topic_share * topics + (1 - topic_share) * background
    counts = np.vstack([rng.multinomial(words, mix[label]) for label in y]).astype(float)
    members = [np.flatnonzero(y == c) for c in range(n_classes)]
    citing, cited = [], []
    for i in np.flatnonzero(rng.random(n_samples) >= empty_share):
        targets = rng.choice(members[y[i]], int(rng.integers(1, 3)), replace=False)
        citing += [i] * len(targets)
        cited += targets.tolist()
    C = sp.csr_matrix((np.ones(len(cited)), (citing, cited)), shape=(n_samples, n_samples))
    return [sp.csr_matrix(counts), C, C.copy()], y
