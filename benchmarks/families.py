"""A generated family of multi-view data sets, and the fixed points the family sweep runs on.

One :class:`FamilyPoint` names a data set; :func:`make_point` draws it, the same data for
the same point (every draw comes from ``point.seed``). The family sweeps what a user's data
can be: how much each view knows on its own, whether the views repeat or complete each
other, a pure-noise view, 2 to 10 views, 40 to 200,000 samples, 2 to 400 clusters,
balanced or 100:1 cluster sizes, and four kinds of views.

The model. In view ``v`` (of ``d_v`` features) cluster ``c`` has a centre ``mu_v[c]``:

* **complementary** views: every view merges the clusters into groups (pairs, one group
  of three when k is odd; a different pairing per view, drawn until no two clusters share
  their group in every view). With ``G_v`` a random centre per group and ``C_v`` a random
  centre per cluster, ``mu_v[c] = sqrt(1 - s^2) G_v[group_v(c)] + s C_v[c]``: at signal
  ``s = 0`` the two clusters of a pair coincide in that view (the view alone separates no
  cluster from all others; the NMI of its merged grouping, :func:`merged_nmi`, is about
  ``log(k/2) / log(k)``), at ``s = 1`` every view separates every cluster, and in
  between the clusters of a pair lie ``s`` times the usual distance apart (clusters of
  different groups stay the usual distance apart in expectation). Only the views together
  tell the clusters of a pair apart at low signal. Needs k >= 3 and 2 views or more.
* **redundant** views: every view sees every cluster, ``mu_v[c] = r(s) C_v[c]`` with
  ``r(s) = 0.4 + 0.6 s``: each view is a noisy copy of the same partition, weak at
  ``s = 0`` (k-means on one dense view alone: NMI about 0.18 at 2,000 samples, k = 10;
  on the 4 views side by side 0.68), clean at ``s = 1`` (0.97 and 1.00).

At 2,000 samples, k = 10, 4 dense complementary views, k-means reaches NMI 0.68 on one
view at ``s = 0`` (its merged pairs: 0.70) and 0.94-1.00 on the 4 views side by side; at
``s = 1`` 0.97 on one view. Centres are Gaussian, ``E|C_v[a] - C_v[b]| = SEPARATION``
(6 noise standard deviations). How a view turns centres into rows depends on ``kind``:

* ``dense``: ``mu_v[y_i]`` + standard Gaussian noise, float32, 16 to 128 features;
* ``count``: Poisson counts, 80 a row on average, with feature rates proportional to
  ``exp(1.2 mu_v[y_i])``; int32, 16 to 128 features;
* ``sparse``: the same with 24 counts a row and rates ``exp(4 mu_v[y_i])`` (a few
  "topic" features per cluster) over 224 to 512 features, about 93 % zeros, float32 CSR;
* ``compositional``: 50 counts a row (rates as ``count``) over 16 to 128 features, each
  row divided by its sum (histograms: rows that sum to 1), float64.

* ``relation``: a keyword view (``sparse``, 1,000 features, redundant centres at the signal)
  beside relation views (links between samples, as papers sharing an author: a symmetric
  0/1 adjacency of N columns, diagonal set), each a ``(degree, homophily)``: a sample draws
  Poisson(degree) links, each to its own cluster with probability ``homophily``, else anywhere.

A **noise view** (``noise_view=True``) is one more view, at a seeded position among the
others, drawn like a good view of the same kind but with a random centre per row (the
same spread as the good views' centres), so it carries nothing about the labels.
``n_views`` counts the good views only.

Cluster sizes: ``balanced`` (differ by at most one) or ``skewed`` (geometric, largest :
smallest = 100 : 1, each at least one sample; exact when the smallest has 10 or more).

Usage::

    from families import DESIGN_POINTS, make_point
    Xs, y = make_point(DESIGN_POINTS[0])
    python benchmarks/families.py design   # prints the points and their merged NMI
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

KINDS = ("dense", "sparse", "count", "compositional")  # and "relation": relation_point
SIZES = ("balanced", "skewed")
SEPARATION = 6.0  # expected distance between two cluster centres, in noise sd
# how sharply the count-like kinds' feature rates follow the centres, and counts per row
BETA = {"count": 1.2, "sparse": 4.0, "compositional": 1.2}
ROW_COUNTS = {"count": 80.0, "sparse": 24.0, "compositional": 50.0}
_DIMS = (64, 48, 32, 96, 40, 128, 24, 80, 56, 16, 72)  # view v of a dense/count point
_SPARSE_DIMS = (256, 384, 224, 320, 448, 288, 512, 240, 352, 416, 272)
LARGE = 5_000  # points above this many samples are the few large ones (--max-samples)


@dataclass(frozen=True)
class FamilyPoint:
    """One data set of the family (see the module docstring for the model)."""

    name: str
    n_samples: int
    n_clusters: int
    n_views: int  # good views; a noise view comes on top
    signal: float  # per-view signal in [0, 1]
    complementary: bool  # True: views merge different pairs; False: redundant copies
    noise_view: bool
    sizes: str  # "balanced" or "skewed" (100:1)
    kind: str  # "dense", "sparse", "count", "compositional" or "relation"
    seed: int
    relations: tuple = ()  # the relation kind's (degree, homophily) per relation view

    @property
    def large(self) -> bool:
        """Whether the point is one of the few large ones (above ``LARGE`` samples)."""
        return self.n_samples > LARGE


def point(n: int, k: int, v: int, s: float, comp: bool = True, *, noise: bool = False,
          sizes: str = "balanced", kind: str = "dense", seed: int) -> FamilyPoint:
    """A point whose name says its parameters, e.g. ``dense-N2000-k10-V4-comp-s0.25``."""
    name = (f"{kind}-N{n}-k{k}-V{v}{'+noise' if noise else ''}-{'comp' if comp else 'red'}"
            f"-s{s:g}{'-skewed' if sizes == 'skewed' else ''}")
    return FamilyPoint(name, n, k, v, s, comp, noise, sizes, kind, seed)


def relation_point(n: int, k: int, s: float, relations: tuple, sizes: str = "balanced", *,
                   seed: int) -> FamilyPoint:
    """A keyword view and relation views, e.g. ``relation-N3000-k3-s0.25-2x0.7+60x0.4``."""
    links = "+".join(f"{d:g}x{h:g}" for d, h in relations)
    name = f"relation-N{n}-k{k}-s{s:g}-{links}{'-skewed' if sizes == 'skewed' else ''}"
    return FamilyPoint(name, n, k, 1 + len(relations), s, False, False, sizes, "relation",
                       seed, tuple(relations))


def cluster_sizes(n_samples: int, n_clusters: int, sizes: str) -> np.ndarray:
    """Sizes of shape (n_clusters,), summing to ``n_samples``, largest first."""
    if sizes == "balanced":
        return np.full(n_clusters, n_samples // n_clusters) + (
            np.arange(n_clusters) < n_samples % n_clusters)
    weights = 100.0 ** (-np.arange(n_clusters) / max(1, n_clusters - 1))
    counts = np.maximum(1, np.round(weights / weights.sum() * n_samples)).astype(np.int64)
    counts[0] += n_samples - counts.sum()
    if counts[0] < counts[-1]:
        raise ValueError(f"{n_samples} samples are too few for {n_clusters} clusters of "
                         f"sizes 100:1")
    return counts


def groupings(p: FamilyPoint) -> list[np.ndarray]:
    """Per good view, the group of every cluster, shape (n_clusters,) each.

    Complementary views merge pairs (a different pairing per view, no two clusters
    together in every view); redundant views keep every cluster on its own.
    """
    k = p.n_clusters
    if not p.complementary:
        return [np.arange(k) for _ in range(p.n_views)]
    rng = np.random.default_rng([p.seed, 0])
    for _ in range(1000):
        groups = [_pairing(rng, k) for _ in range(p.n_views)]
        if len({tuple(g[c] for g in groups) for c in range(k)}) == k:
            return groups
    raise ValueError(f"point {p.name}: complementary views need k >= 3 and 2 views or more")


def _pairing(rng: np.random.Generator, k: int) -> np.ndarray:
    order = rng.permutation(k)
    group = np.empty(k, dtype=np.int64)
    group[order] = np.arange(k) // 2
    if k % 2 and k > 3:
        group[order[-1]] = group[order[-2]]  # the odd one joins the last pair
    return group


def merged_nmi(p: FamilyPoint, view: int = 0) -> float:
    """The NMI (max-normalised) of good view ``view``'s merged grouping against the labels:
    about what one view alone can reach at signal 0."""
    sizes = cluster_sizes(p.n_samples, p.n_clusters, p.sizes).astype(float)
    group_sizes = np.bincount(groupings(p)[view], weights=sizes)
    return float(_entropy(group_sizes) / _entropy(sizes))


def _entropy(counts: np.ndarray) -> float:
    share = counts[counts > 0] / counts.sum()
    return float(-np.sum(share * np.log(share)))


def _check(p: FamilyPoint) -> None:
    if p.kind not in (*KINDS, "relation") or p.sizes not in SIZES:
        raise ValueError(f"point {p.name}: kind must be one of {KINDS}, sizes one of {SIZES}")
    if not 0.0 <= p.signal <= 1.0:
        raise ValueError(f"point {p.name}: signal {p.signal} must be in [0, 1]")
    if not 1 <= p.n_views <= len(_DIMS) - 1 or not 2 <= p.n_clusters <= p.n_samples:
        raise ValueError(f"point {p.name}: needs 1 to {len(_DIMS) - 1} views and "
                         f"2 <= n_clusters <= n_samples")


def make_point(p: FamilyPoint) -> tuple[list[np.ndarray | sp.csr_matrix], np.ndarray]:
    """The views and labels of a point.

    Returns
    -------
    Xs : list of ndarray or csr_matrix, each of shape (n_samples, d_v)
        ``n_views`` good views (+ 1 noise view), of the point's kind: float32 (dense),
        int32 (count), float32 CSR (sparse), float64 rows summing to 1 (compositional).
    y : ndarray of shape (n_samples,)
        Labels ``0..n_clusters-1`` (0 the largest cluster), int64, in a seeded order.
    """
    _check(p)
    if p.kind == "relation":
        return _relation_views(p)
    y = np.repeat(np.arange(p.n_clusters), cluster_sizes(p.n_samples, p.n_clusters, p.sizes))
    np.random.default_rng([p.seed, 1]).shuffle(y)
    groups = groupings(p)
    n_total = p.n_views + p.noise_view
    noise_at = int(np.random.default_rng([p.seed, 2]).integers(n_total)) if p.noise_view \
        else -1
    dims = _SPARSE_DIMS if p.kind == "sparse" else _DIMS
    views, good = [], 0
    for v in range(n_total):
        model = np.random.default_rng([p.seed, 3, v])
        rows = np.random.default_rng([p.seed, 4, v])
        d = dims[v]
        scale = SEPARATION / math.sqrt(2 * d)
        if v == noise_at:
            means = scale * rows.standard_normal((p.n_samples, d))  # a centre per row
        else:
            centres = _centres(model, groups[good], p.signal, p.complementary, d, scale)
            means = centres[y]
            good += 1
        views.append(_draw(rows, means, p.kind))
    return views, y


def _centres(rng: np.random.Generator, group: np.ndarray, signal: float,
             complementary: bool, d: int, scale: float) -> np.ndarray:
    """Cluster centres of one view, shape (n_clusters, d)."""
    own = scale * rng.standard_normal((group.size, d))
    if not complementary:
        return (0.4 + 0.6 * signal) * own
    shared = scale * rng.standard_normal((int(group.max()) + 1, d))
    return math.sqrt(1.0 - signal**2) * shared[group] + signal * own


def _draw(rng: np.random.Generator, means: np.ndarray, kind: str):
    """Rows of one view around ``means`` (n_samples, d), as the kind draws them."""
    if kind == "dense":
        X = rng.standard_normal(means.shape, dtype=np.float32)
        X += means.astype(np.float32)
        return X
    logits = BETA[kind] * means
    logits -= logits.max(axis=1, keepdims=True)
    rates = np.exp(logits)
    rates *= ROW_COUNTS[kind] / rates.sum(axis=1, keepdims=True)
    counts = rng.poisson(rates).astype(np.int32)
    if kind == "count":
        return counts
    if kind == "sparse":
        return sp.csr_matrix(counts, dtype=np.float32)
    totals = counts.sum(axis=1, keepdims=True)
    counts[totals[:, 0] == 0, 0] = totals[totals[:, 0] == 0] = 1  # an empty histogram
    return counts / totals


def _relation_views(p: FamilyPoint) -> tuple[list, np.ndarray]:
    """The keyword view and relation views of a ``relation`` point, all from ``p.seed``."""
    rng = np.random.default_rng(p.seed)
    y = np.repeat(np.arange(p.n_clusters), cluster_sizes(p.n_samples, p.n_clusters, p.sizes))
    rng.shuffle(y)
    centres = (0.4 + 0.6 * p.signal) * SEPARATION / math.sqrt(2000) * \
        rng.standard_normal((p.n_clusters, 1000))
    views = [_draw(rng, centres[y], "sparse")]
    members = [np.flatnonzero(y == c) for c in range(p.n_clusters)]
    for degree, homophily in p.relations:
        rows = np.repeat(np.arange(p.n_samples), rng.poisson(degree, p.n_samples))
        own = rng.random(rows.size) < homophily
        columns = rng.integers(0, p.n_samples, rows.size)
        for c, in_c in enumerate(members):
            pick = own & (y[rows] == c)
            columns[pick] = in_c[rng.integers(0, in_c.size, pick.sum())]
        links = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, columns)), shape=(
            p.n_samples, p.n_samples))
        views.append(sp.csr_matrix(((links + links.T) > 0).astype(np.float32)
                                   + sp.eye(p.n_samples, dtype=np.float32)))
    return views, y


_S = (0.0, 0.25, 0.5, 0.75, 1.0)
DESIGN_POINTS: list[FamilyPoint] = [
    # the signal sweep (the plot's lines): 2,000 x 4 dense views, k = 10
    *[point(2000, 10, 4, s, True, seed=100 + i) for i, s in enumerate(_S)],
    *[point(2000, 10, 4, s, False, seed=110 + i) for i, s in enumerate(_S)],
    # a pure-noise view among the good ones
    point(2000, 10, 4, 0.25, True, noise=True, seed=120),
    point(2000, 10, 4, 0.75, True, noise=True, seed=121),
    point(2000, 10, 4, 0.5, False, noise=True, seed=122),
    # 2 to 10 views
    point(2000, 10, 2, 0.25, True, seed=130),
    point(2000, 10, 6, 0.25, True, seed=131),
    point(2000, 10, 10, 0.25, True, seed=132),
    point(2000, 10, 10, 0.0, False, seed=133),
    # N from 40; k from 2 to 400
    point(40, 4, 3, 0.25, True, seed=140),
    point(500, 5, 3, 0.5, True, seed=141),
    point(5000, 10, 4, 0.25, True, seed=142),
    point(1000, 2, 3, 0.25, False, seed=143),
    point(3000, 3, 3, 0.0, True, seed=144),
    point(5000, 50, 4, 0.25, True, seed=145),
    point(5000, 100, 4, 0.5, True, seed=146),
    # 100:1 sizes
    point(3000, 10, 4, 0.25, True, sizes="skewed", seed=150),
    point(3000, 10, 4, 0.75, True, sizes="skewed", seed=151),
    point(3000, 10, 4, 0.5, False, sizes="skewed", seed=152),
    # sparse, count and compositional views
    *[point(2000, 10, 4, s, c, kind=kind, seed=160 + 3 * j + i)
      for j, kind in enumerate(("sparse", "count", "compositional"))
      for i, (s, c) in enumerate(((0.25, True), (0.75, True), (0.5, False)))],
    # large (skipped with --max-samples below their size)
    point(20000, 400, 4, 0.5, True, seed=170),
    point(50000, 20, 4, 0.25, True, seed=171),
    point(200000, 20, 4, 0.25, True, seed=172),
]

_S_CONF = (0.125, 0.375, 0.625, 0.875)
CONFIRMATION_POINTS: list[FamilyPoint] = [
    *[point(1500, 12, 4, s, True, seed=2000 + i) for i, s in enumerate(_S_CONF)],
    *[point(1500, 12, 4, s, False, seed=2010 + i) for i, s in enumerate(_S_CONF)],
    point(1500, 8, 3, 0.375, True, noise=True, seed=2020),
    point(1500, 8, 5, 0.625, True, noise=True, seed=2021),
    point(1500, 8, 3, 0.375, False, noise=True, seed=2022),
    point(1500, 8, 3, 0.125, True, seed=2030),
    point(1500, 8, 5, 0.125, True, seed=2031),
    point(1500, 8, 8, 0.375, True, seed=2032),
    point(1500, 8, 8, 0.125, False, seed=2033),
    point(100, 6, 2, 0.375, True, seed=2040),
    point(1000, 6, 3, 0.125, True, seed=2041),
    point(4000, 12, 5, 0.375, True, seed=2042),
    point(800, 2, 4, 0.375, False, seed=2043),
    point(2500, 4, 2, 0.125, True, seed=2044),
    point(4000, 30, 3, 0.375, True, seed=2045),
    point(5000, 200, 4, 0.625, True, seed=2046),
    point(4000, 20, 3, 0.375, True, sizes="skewed", seed=2050),
    point(4000, 20, 3, 0.875, True, sizes="skewed", seed=2051),
    point(4000, 20, 3, 0.625, False, sizes="skewed", seed=2052),
    *[point(1500, 8, 3, s, c, kind=kind, seed=2060 + 3 * j + i)
      for j, kind in enumerate(("sparse", "count", "compositional"))
      for i, (s, c) in enumerate(((0.125, True), (0.625, True), (0.375, False)))],
    point(30000, 300, 3, 0.625, True, seed=2070),
    point(100000, 30, 3, 0.125, True, seed=2071),
    point(150000, 16, 5, 0.375, True, seed=2072),
]


def _both_kinds(shapes: tuple, first_seed: int) -> list[FamilyPoint]:
    """A complementary and a redundant dense point of each shape ``(n, k, views, signal)``."""
    return [point(n, k, v, s, c, seed=first_seed + 2 * i + c)
            for i, (n, k, v, s) in enumerate(shapes) for c in (True, False)]


#: Written down on 2026-11-28 before any method ran on them, to confirm the spectral
#: candidate's rule (chosen on the design part, then bounded by clusters' sizes after the
#: confirmation part was seen): few samples a cluster (6 to 50), as face and gene sets have.
FRESH_SMALL_POINTS: list[FamilyPoint] = [
    *_both_kinds(((60, 6, 3, 0.25), (120, 12, 3, 0.375), (240, 20, 4, 0.5),
                  (300, 10, 2, 0.125), (600, 40, 3, 0.25), (1000, 25, 4, 0.375),
                  (2000, 50, 4, 0.5)), 3000),
    point(400, 10, 3, 0.25, True, kind="sparse", seed=3020),
    point(300, 12, 3, 0.5, False, kind="count", seed=3021),
    point(500, 20, 3, 0.375, True, kind="compositional", seed=3022),
    point(600, 12, 3, 0.375, True, sizes="skewed", seed=3023),
]

#: Written down on 2026-11-28 before any method ran on them, to confirm a second keep rule
#: for the spectral candidate (the held-out check as well), chosen on the design part
#: within the bound of 50 samples a cluster after FRESH_SMALL_POINTS had been seen.
FRESH_SMALL_POINTS_2: list[FamilyPoint] = [
    *_both_kinds(((80, 8, 3, 0.375), (150, 10, 4, 0.25), (200, 25, 3, 0.5),
                  (400, 16, 2, 0.375), (800, 32, 3, 0.25), (1200, 30, 5, 0.5),
                  (1800, 60, 3, 0.375)), 3100),
    point(500, 20, 3, 0.5, False, kind="sparse", seed=3120),
    point(400, 16, 4, 0.25, True, kind="count", seed=3121),
    point(300, 10, 3, 0.375, False, kind="compositional", seed=3122),
    point(900, 30, 3, 0.25, False, sizes="skewed", seed=3123),
]

PARTS = {"design": DESIGN_POINTS, "confirmation": CONFIRMATION_POINTS,
         "fresh-small": FRESH_SMALL_POINTS, "fresh-small-2": FRESH_SMALL_POINTS_2}


if __name__ == "__main__":
    for q in PARTS[sys.argv[1] if len(sys.argv) > 1 else "design"]:
        print(f"{q.name:<48} seed {q.seed:>5}  merged NMI of view 0 {merged_nmi(q):.3f}")
