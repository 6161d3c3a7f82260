"""Seeded generators of data shapes unlike ``scale_data.latent_views``, for quality at scale.

Every shape draws 4 views of 944/576/512/640 float32 features (YTF-400's) from clusters in
a latent space, each view a random Gaussian projection of the latent point, plus noise:

``skewed``
    Zipf-sized clusters (size of the r-th largest proportional to 1/r): at k = 100 the
    largest is 100 times the smallest.
``small``
    Many small clusters: sizes log-uniform over a 100-fold range (at 398,191 samples and
    k = 400, about 50 to 5,000 a cluster).
``partial``
    Views that each see half of a 24-dimensional latent space (a different half per view),
    Dirichlet(5) sizes, per-feature noise 4.0 (10.0 on the fourth, weak view), the first
    view in absolute values (non-negative, like histogram features).

Labels come from the cluster sizes (shuffled); rows are generated in blocks, each from its
own seed, so that the same arguments give the same data in memory or written block by block
into ``view{v}.npy`` files (:func:`write_shape_dir`).

    python benchmarks/shapes.py partial 100000 400 /tmp/partial-100k --seed 0
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scale_data import already_written

DIMS = (944, 576, 512, 640)
SHAPES = ("skewed", "small", "partial")
_BLOCK = 65_536
_FORMAT = "fastmice-shapes/1"


@dataclass(frozen=True)
class Shape:
    """How a shape draws its clusters and views."""

    sizes: str             # "zipf", "loguniform" or "dirichlet"
    latent_dim: int
    spread: float          # scale of the cluster centres in the latent space
    visible: float         # fraction of the latent dimensions each view sees
    noise: tuple[float, ...]  # per-feature noise of each view
    absolute_first: bool


SHAPE_MODELS = {
    "skewed": Shape("zipf", 24, 1.5, 1.0, (3.0, 3.0, 3.0, 3.0), False),
    "small": Shape("loguniform", 24, 1.5, 1.0, (3.0, 3.0, 3.0, 3.0), False),
    "partial": Shape("dirichlet", 24, 1.5, 0.5, (4.0, 4.0, 4.0, 10.0), True),
}


def cluster_sizes(kind: str, n_samples: int, n_clusters: int, seed: int) -> np.ndarray:
    """Sizes of the clusters (each at least 1), summing to ``n_samples``."""
    rng = np.random.default_rng([seed, 0])
    if kind == "zipf":
        weights = 1.0 / np.arange(1, n_clusters + 1)
    elif kind == "loguniform":
        weights = np.exp(rng.uniform(np.log(1.0), np.log(100.0), n_clusters))
    else:
        weights = rng.dirichlet(np.full(n_clusters, 5.0))
    sizes = np.maximum(1, np.floor(weights / weights.sum() * n_samples).astype(np.int64))
    sizes[np.argmax(sizes)] += n_samples - sizes.sum()
    return sizes


def shape_labels(shape: str, n_samples: int, n_clusters: int, seed: int) -> np.ndarray:
    """Labels of shape (n_samples,): the sizes' labels in a seeded random order."""
    sizes = cluster_sizes(SHAPE_MODELS[shape].sizes, n_samples, n_clusters, seed)
    y = np.repeat(np.arange(n_clusters), sizes)
    np.random.default_rng([seed, 1]).shuffle(y)
    return y


def _model(shape: Shape, n_clusters: int, seed: int,
           dims: tuple[int, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng([seed, 2])
    centres = shape.spread * rng.standard_normal((n_clusters, shape.latent_dim))
    seen = max(1, round(shape.visible * shape.latent_dim))
    projections = []
    for d in dims:
        projection = rng.standard_normal((shape.latent_dim, d)) / np.sqrt(seen)
        blind = rng.permutation(shape.latent_dim)[seen:]
        projection[blind] = 0.0
        projections.append(projection)
    return centres, projections


def shape_block(shape_name: str, start: int, stop: int, y: np.ndarray, n_clusters: int,
                seed: int, dims: tuple[int, ...] = DIMS,
                noise_scale: float = 1.0) -> list[np.ndarray]:
    """Rows ``start:stop`` of every view, float32, shapes (stop - start, dims[v])."""
    shape = SHAPE_MODELS[shape_name]
    centres, projections = _model(shape, n_clusters, seed, dims)
    rng = np.random.default_rng([seed, 3, start])
    z = centres[y[start:stop]] + rng.standard_normal((stop - start, shape.latent_dim))
    views = []
    for v, projection in enumerate(projections):
        noise = noise_scale * shape.noise[min(v, len(shape.noise) - 1)]
        X = rng.standard_normal((stop - start, projection.shape[1]), dtype=np.float32)
        X *= np.float32(noise)
        X += (z @ projection).astype(np.float32)
        if v == 0 and shape.absolute_first:
            np.abs(X, out=X)
        views.append(X)
    return views


def make_shape(shape: str, n_samples: int, n_clusters: int, seed: int = 0,
               dims: tuple[int, ...] = DIMS,
               noise_scale: float = 1.0) -> tuple[list[np.ndarray], np.ndarray]:
    """The set in memory: float32 views of shape (n_samples, dims[v]) and labels (n,).

    ``dims`` other than the default (four views) give other widths, e.g. narrow views
    for a test; the noise of each view is the shape's (the last view's for any beyond),
    times ``noise_scale`` (narrow views average less noise away than wide ones).
    """
    y = shape_labels(shape, n_samples, n_clusters, seed)
    Xs = [np.empty((n_samples, d), dtype=np.float32) for d in dims]
    for start in range(0, n_samples, _BLOCK):
        stop = min(start + _BLOCK, n_samples)
        for X, part in zip(Xs, shape_block(shape, start, stop, y, n_clusters, seed, dims,
                                                 noise_scale),
                           strict=True):
            X[start:stop] = part
    return Xs, y


def write_shape_dir(directory: Path, shape: str, n_samples: int, n_clusters: int,
                    seed: int = 0) -> tuple[Path, float]:
    """Write ``view{v}.npy`` and ``labels.npy`` block by block, unless already there.

    Peak memory is one block of rows. Returns the folder and the seconds spent (0.0 when
    the same set was already written).
    """
    meta = {"format": _FORMAT, "shape": shape, "n_samples": n_samples,
            "n_clusters": n_clusters, "seed": seed}
    if already_written(directory, meta):
        return directory, 0.0
    started = time.perf_counter()
    y = shape_labels(shape, n_samples, n_clusters, seed)
    files = [np.lib.format.open_memmap(directory / f"view{v}.npy", mode="w+",
                                       dtype=np.float32, shape=(n_samples, d))
             for v, d in enumerate(DIMS)]
    for start in range(0, n_samples, _BLOCK):
        stop = min(start + _BLOCK, n_samples)
        for out, part in zip(files, shape_block(shape, start, stop, y, n_clusters, seed),
                             strict=True):
            out[start:stop] = part
        for out in files:
            out.flush()
    del files
    np.save(directory / "labels.npy", y)
    (directory / "meta.json").write_text(json.dumps(meta))
    return directory, time.perf_counter() - started


def load_shape_dir(directory: Path) -> tuple[list[np.ndarray], np.ndarray]:
    """The views of a written set, memory-mapped read-only, and its labels."""
    views = sorted(directory.glob("view*.npy"), key=lambda p: int(p.stem[4:]))
    return [np.load(p, mmap_mode="r") for p in views], np.load(directory / "labels.npy")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("shape", choices=SHAPES)
    parser.add_argument("n_samples", type=int)
    parser.add_argument("n_clusters", type=int)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path, seconds = write_shape_dir(args.directory, args.shape, args.n_samples,
                                    args.n_clusters, args.seed)
    sizes = np.bincount(np.load(path / "labels.npy"))
    print(f"{path}: {args.n_samples} x {DIMS}, k = {args.n_clusters}, cluster sizes "
          f"{sizes.min()}..{sizes.max()} (median {int(np.median(sizes))}), {seconds:.1f} s")


if __name__ == "__main__":
    main()
