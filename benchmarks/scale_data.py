"""Seeded generators of the large synthetic data sets the scale benchmarks run on.

``latent_views``: the paper's largest shape (YTF-400: 4 views of 944/576/512/640 features)
at any N and k. Clusters live in a ``latent_dim``-dimensional latent space; every view sees
its own random ``view_rank``-dimensional slice of it through its own random projection to
its features, plus isotropic noise and an offset, so no single view holds every direction
that separates the clusters.

``paired_views``: the peers' ground (200,000 x 256/128/64/32, k = 20). 20 Gaussian clusters;
in every view they are merged into 10 random pairs whose two centres differ only slightly,
a different pairing per view, so that only the views together separate all 20.

Both are generated in blocks of rows, each block from its own seed, so the same arguments
give the same data whether they are held in memory or written block by block into
``view{v}.npy`` files that never fit in memory at once.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

YTF_DIMS = (944, 576, 512, 640)
PEER_DIMS = (256, 128, 64, 32)
_BLOCK = 65_536
_FORMAT = "fastmice-scale-data/2"


def _labels(n_samples: int, n_clusters: int, seed: int) -> np.ndarray:
    y = np.arange(n_samples, dtype=np.int64) % n_clusters
    np.random.default_rng([seed, 0]).shuffle(y)
    return y


def _latent_model(n_clusters: int, dims: Sequence[int], latent_dim: int, view_rank: int,
                  seed: int) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng([seed, 1])
    centres = rng.standard_normal((n_clusters, latent_dim))
    projections, offsets = [], []
    for d in dims:
        slice_basis, _ = np.linalg.qr(rng.standard_normal((latent_dim, view_rank)))
        to_features = rng.standard_normal((view_rank, d)) / math.sqrt(view_rank)
        projections.append(slice_basis @ to_features)  # (latent_dim, d)
        offsets.append(rng.standard_normal(d))
    return centres, projections, offsets


def latent_views_block(start: int, stop: int, y: np.ndarray, n_clusters: int,
                       dims: Sequence[int] = YTF_DIMS, *, latent_dim: int = 40,
                       view_rank: int = 24, spread: float = 1.2, noise: float = 0.5,
                       seed: int = 0, dtype: np.dtype = np.float32) -> list[np.ndarray]:
    """Rows ``start:stop`` of every view of :func:`latent_views` (same arguments)."""
    centres, projections, offsets = _latent_model(n_clusters, dims, latent_dim, view_rank,
                                                  seed)
    rng = np.random.default_rng([seed, 2, start])
    z = centres[y[start:stop]] + spread * rng.standard_normal((stop - start, latent_dim))
    views = []
    for projection, offset in zip(projections, offsets, strict=True):
        X = rng.standard_normal((stop - start, len(offset)), dtype=np.float32).astype(dtype)
        X *= dtype.type(noise)
        X += (z @ projection + offset).astype(dtype)
        views.append(X)
    return views


def paired_views_block(start: int, stop: int, y: np.ndarray, n_clusters: int,
                       dims: Sequence[int] = PEER_DIMS, *, pair_gap: float = 0.4,
                       separation: float = 8.0, seed: int = 0,
                       dtype: np.dtype = np.float32) -> list[np.ndarray]:
    """Rows ``start:stop`` of every view of :func:`paired_views` (same arguments)."""
    model = np.random.default_rng([seed, 1])
    rng = np.random.default_rng([seed, 2, start])
    views = []
    for d in dims:
        pairing = model.permutation(n_clusters).reshape(-1, 2)  # (n_clusters / 2, 2)
        pair_of = np.empty(n_clusters, dtype=np.int64)
        side = np.empty(n_clusters)
        for p, (a, b) in enumerate(pairing):
            pair_of[a], pair_of[b] = p, p
            side[a], side[b] = -0.5, 0.5
        pair_centres = model.standard_normal((len(pairing), d)) * (separation / math.sqrt(2 * d))
        gap_direction = model.standard_normal((len(pairing), d))
        gap_direction /= np.linalg.norm(gap_direction, axis=1, keepdims=True)
        centres = pair_centres[pair_of] + pair_gap * side[:, None] * gap_direction[pair_of]
        X = rng.standard_normal((stop - start, d), dtype=np.float32).astype(dtype)
        X *= dtype.type(1.0 / math.sqrt(d) * 2.0)
        X += centres[y[start:stop]].astype(dtype)
        views.append(X)
    return views


def _generate(block: Callable[..., list[np.ndarray]], n_samples: int, n_clusters: int,
              dims: Sequence[int], seed: int, dtype: np.dtype,
              **options: float) -> tuple[list[np.ndarray], np.ndarray]:
    y = _labels(n_samples, n_clusters, seed)
    Xs = [np.empty((n_samples, d), dtype=dtype) for d in dims]
    for start in range(0, n_samples, _BLOCK):
        stop = min(start + _BLOCK, n_samples)
        for X, part in zip(Xs, block(start, stop, y, n_clusters, dims, seed=seed, dtype=dtype,
                                     **options), strict=True):
            X[start:stop] = part
    return Xs, y


def latent_views(n_samples: int, n_clusters: int, dims: Sequence[int] = YTF_DIMS, *,
                 seed: int = 0, dtype: type = np.float32,
                 **options: float) -> tuple[list[np.ndarray], np.ndarray]:
    """The YTF-shaped set in memory: views of shape (n_samples, dims[v]) and labels (n,)."""
    return _generate(latent_views_block, n_samples, n_clusters, dims, seed, np.dtype(dtype),
                     **options)


def paired_views(n_samples: int, n_clusters: int = 20, dims: Sequence[int] = PEER_DIMS, *,
                 seed: int = 0, dtype: type = np.float32,
                 **options: float) -> tuple[list[np.ndarray], np.ndarray]:
    """The peers' set in memory: views of shape (n_samples, dims[v]) and labels (n,)."""
    return _generate(paired_views_block, n_samples, n_clusters, dims, seed, np.dtype(dtype),
                     **options)


def already_written(directory: Path, meta: dict) -> bool:
    """Whether ``directory`` holds the set ``meta`` describes; if not, it is made ready for
    writing (created, its stale ``meta.json`` removed: written last, once the set is)."""
    meta_path = directory / "meta.json"
    if meta_path.exists() and json.loads(meta_path.read_text()) == meta:
        return True
    directory.mkdir(parents=True, exist_ok=True)
    meta_path.unlink(missing_ok=True)
    return False


def write_views_dir(directory: Path, kind: str, n_samples: int, n_clusters: int, *,
                    seed: int = 0, dtype: str = "float32",
                    rows: tuple[int, int] | None = None) -> tuple[Path, float]:
    """Write ``view{v}.npy`` and ``labels.npy`` block by block, unless already there.

    ``rows=(start, stop)`` writes only those rows of the ``n_samples``-row set (e.g. a
    first batch and a later one). Peak memory is one block of rows, whatever the size.
    Returns the folder and the seconds spent (0.0 when the same set was already written).
    """
    block, dims = {"latent": (latent_views_block, YTF_DIMS),
                   "paired": (paired_views_block, PEER_DIMS)}[kind]
    start, stop = rows or (0, n_samples)
    meta = {"format": _FORMAT, "kind": kind, "n_samples": n_samples, "n_clusters": n_clusters,
            "dims": list(dims), "seed": seed, "dtype": dtype, "rows": [start, stop]}
    if already_written(directory, meta):
        return directory, 0.0
    started = time.perf_counter()
    y = _labels(n_samples, n_clusters, seed)
    files = [np.lib.format.open_memmap(directory / f"view{v}.npy", mode="w+", dtype=dtype,
                                       shape=(stop - start, d)) for v, d in enumerate(dims)]
    for first in range(start - start % _BLOCK, stop, _BLOCK):
        last = min(first + _BLOCK, n_samples)
        parts = block(first, last, y, n_clusters, dims, seed=seed, dtype=np.dtype(dtype))
        lo, hi = max(first, start), min(last, stop)
        for out, part in zip(files, parts, strict=True):
            out[lo - start:hi - start] = part[lo - first:hi - first]
        for out in files:
            out.flush()  # written pages go to the page cache, not this process
    del files
    np.save(directory / "labels.npy", y[start:stop])
    (directory / "meta.json").write_text(json.dumps(meta))
    return directory, time.perf_counter() - started
