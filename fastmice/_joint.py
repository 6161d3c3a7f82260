"""The best mode's joint-space candidate: k-means on all views side by side.

Where every view is weak and only the views together separate the clusters (each view
merges other clusters), the base clusterings of random view groups each see too little, and
their consensus cannot undo the merges. The joint space sees every feature of every view at
once. Its k-means is one more candidate of the best mode's consensus: it is kept only if it
agrees better with the weighted base clusterings than the consensus cut does (the ensemble's
own objective, as the consensus replicates are chosen) or less well by at most one NMI point
(:mod:`fastmice._joint_consensus`), so that on data whose views each see the clusters the
graph consensus stays.

The joint space puts each view on an equal footing whatever its scale or width: a view is
first compared as its metric says (rows unit-normalised for cosine, square roots for
Hellinger), centred (dense views) and scaled to unit total variance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fastmice._best import heavy_cuts
from fastmice._blas import on_one_blas_thread
from fastmice._joint_kmeans import joint_kmeans
from fastmice._parallel import fill_blocks, map_blocks, map_threads
from fastmice._specs import group_rng
from fastmice._stages import stage

__all__ = ["JOINT_STREAM", "JointEnsemble", "JointSpace", "joint_ensemble", "nearest_rows"]

#: The joint k-means' stream under the root seed (after the groups' and the consensus').
JOINT_STREAM = 2
#: Most rows the joint k-means fits on (at least :data:`JOINT_PER_CLUSTER` a cluster); the
#: other rows are assigned to its centres. As the consensus k-means' sample.
JOINT_SAMPLE, JOINT_PER_CLUSTER = 20_000, 50
#: k-means++ starts of the candidate (one above :data:`JOINT_SAMPLE` rows: k-means++ costs
#: k times a random start, and the fit then runs on a sample anyway); a member has one.
JOINT_N_INIT = 3
#: Rounds of one start at most (the assignments rarely still change after 30); on a sample
#: (more than :data:`JOINT_SAMPLE` rows) 10 from the k-means++ start: each round costs
#: sample x features x k (at 100,000 x 2,672 features, k = 400: 30 rounds were 91 CPU-s,
#: 2.5x the paper mode's fit with the rest of the best mode).
JOINT_MAX_ITER, JOINT_SAMPLED_ROUNDS = 30, 10
#: Joint rows with 1 / this of their entries set or more are held dense (at most 1.5x CSR).
_DENSE_SHARE = 3
#: Rows transformed and assigned at a time.
_BLOCK_ROWS = 8192


@dataclass
class JointSpace:
    """How each view enters the joint space.

    Attributes
    ----------
    metrics : tuple of str
        Each view's metric (``"euclidean"``, ``"cosine"`` or ``"hellinger"``).
    means : list of ndarray or None
        Each dense view's column means after its metric's transform (None: sparse, not
        centred, so that it stays sparse).
    scales : ndarray of shape (n_views,)
        The factor that gives each transformed view unit total variance.
    """

    metrics: tuple[str, ...]
    means: list[np.ndarray | None]
    scales: np.ndarray

    def transform(self, Xs: Sequence, rows: slice | np.ndarray) -> np.ndarray | sp.csr_matrix:
        """The joint rows of samples ``rows``: shape (n_rows, sum of the views' widths),
        float32, CSR if any view is sparse."""
        blocks = [_scaled(_metric_rows(X, rows, metric), mean, scale)
                  for X, metric, mean, scale in zip(Xs, self.metrics, self.means, self.scales,
                                                    strict=True)]
        if any(sp.issparse(b) for b in blocks):
            return sp.hstack([sp.csr_matrix(b) for b in blocks], format="csr",
                             dtype=np.float32)
        return np.hstack(blocks).astype(np.float32, copy=False)

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {"metrics": np.array(self.metrics), "scales": self.scales}
        for v, mean in enumerate(self.means):
            if mean is not None:
                arrays[f"mean{v}"] = mean
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> JointSpace:
        metrics = tuple(str(m) for m in np.asarray(arrays["metrics"]))
        means = [np.asarray(arrays[f"mean{v}"]) if f"mean{v}" in arrays else None
                 for v in range(len(metrics))]
        return cls(metrics, means, np.asarray(arrays["scales"]))


def _metric_rows(X, rows: slice | np.ndarray, metric: str):
    """Rows of a view as its metric compares them: float32 dense or CSR."""
    block = X[rows]
    if sp.issparse(block):
        block = sp.csr_matrix(block, dtype=np.float32)
        if metric == "hellinger":
            block.data = np.sqrt(np.maximum(block.data, 0))
        elif metric == "cosine":
            norms = np.sqrt(np.asarray(block.multiply(block).sum(axis=1)).ravel())
            block = sp.csr_matrix(sp.diags(1.0 / np.where(norms > 0, norms, 1)) @ block,
                                  dtype=np.float32)
        return block
    block = np.array(block, dtype=np.float32)
    if metric == "hellinger":
        np.sqrt(np.maximum(block, 0, out=block), out=block)
    elif metric == "cosine":
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        block /= np.where(norms > 0, norms, 1)[:, None]
    return block


def _scaled(block, mean: np.ndarray | None, scale: float):
    if sp.issparse(block):
        return block * np.float32(scale)
    if mean is not None:
        block -= mean
    block *= np.float32(scale)
    return block


def fit_joint_space(Xs: Sequence, metrics: Sequence[str], n_jobs: int = 1) -> JointSpace:
    """Each view's mean and scale, read a block of rows at a time (blocks in ``n_jobs``
    threads, added up in block order).

    Parameters
    ----------
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
    metrics : sequence of str
        Each view's metric (resolved: no ``"auto"``).
    n_jobs : int, default=1

    Returns
    -------
    space : JointSpace
    """
    n_samples = Xs[0].shape[0]
    means, scales = [], []
    for X, metric in zip(Xs, metrics, strict=True):
        def block_sums(rows: slice, X=X, metric=metric) -> tuple[np.ndarray, float]:
            block = _metric_rows(X, rows, metric)
            return (np.asarray(block.sum(axis=0), dtype=np.float64).ravel(),
                    float(block.multiply(block).sum() if sp.issparse(block)
                          else np.einsum("ij,ij->", block, block, dtype=np.float64)))

        sums = np.zeros(X.shape[1])
        squares = 0.0
        for block_sum, block_squares in map_blocks(block_sums, n_samples, n_jobs, _BLOCK_ROWS):
            sums += block_sum
            squares += block_squares
        mean = sums / n_samples
        variance = squares / n_samples - float(mean @ mean)
        scales.append(1.0 / np.sqrt(variance) if variance > 1e-12 else 1.0)
        means.append(None if sp.issparse(X) else mean.astype(np.float32))
    return JointSpace(tuple(metrics), means, np.asarray(scales))


@dataclass
class JointEnsemble:
    """k-means in the joint space: the candidate on every joint feature and the members on
    random subsets of them, able to label new samples.

    Attributes
    ----------
    space : JointSpace
    centers : ndarray of shape (n_clusters, n_joint_features)
        The candidate's centres.
    labels_ : ndarray of shape (n_samples,)
        The candidate's labels.
    member_columns : list of ndarray
        The joint features each member clusters on.
    member_centers : list of ndarray
        Each member's centres, shape (k_j, len(member_columns[j])).
    member_labels_ : ndarray of shape (n_samples, n_members)
    """

    space: JointSpace
    centers: np.ndarray
    labels_: np.ndarray
    member_columns: list[np.ndarray]
    member_centers: list[np.ndarray]
    member_labels_: np.ndarray

    @property
    def n_members(self) -> int:
        return len(self.member_columns)

    def predict(self, Xs: Sequence, n_jobs: int | None = 1) -> tuple[np.ndarray, np.ndarray]:
        """The candidate's labels (n_new,) and the members' (n_new, n_members) of new
        samples: the nearest centre of each."""
        return _nearest_centres(Xs, self.space, [None, *self.member_columns],
                                [self.centers, *self.member_centers], n_jobs)

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"space_{k}": v for k, v in self.space.to_arrays().items()}
        arrays.update(centers=self.centers, labels=self.labels_,
                      member_labels=self.member_labels_)
        for j, (columns, centers) in enumerate(zip(self.member_columns, self.member_centers,
                                                   strict=True)):
            arrays[f"member{j}_columns"] = columns
            arrays[f"member{j}_centers"] = centers
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> JointEnsemble:
        space = JointSpace.from_arrays({k[len("space_"):]: arrays[k] for k in arrays
                                        if k.startswith("space_")})
        member_labels = np.asarray(arrays["member_labels"])
        count = member_labels.shape[1]
        return cls(space, np.asarray(arrays["centers"]), np.asarray(arrays["labels"]),
                   [np.asarray(arrays[f"member{j}_columns"]) for j in range(count)],
                   [np.asarray(arrays[f"member{j}_centers"]) for j in range(count)],
                   member_labels)


def nearest_rows(Z, centers: np.ndarray, center_sq: np.ndarray) -> np.ndarray:
    """Each row's nearest centre (n_rows,): the least ``|c|^2 - 2 x.c``."""
    return np.argmin(np.asarray(Z @ centers.T) * -2 + center_sq, axis=1)


@on_one_blas_thread
def _nearest_centres(Xs: Sequence, space: JointSpace, columns: list[np.ndarray | None],
                     centers: list[np.ndarray], n_jobs: int | None = 1
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre of each sample for each set of centres (on its joint columns; None:
    all): the first set's labels (n,) and the others' (n, n_sets - 1). Each block of rows
    is put in the joint space once for all sets."""
    n_samples = Xs[0].shape[0]
    prepared = [(c.astype(np.float32), np.einsum("ij,ij->i", c, c, dtype=np.float32))
                for c in centers]

    def block(start: int) -> np.ndarray:
        Z = space.transform(Xs, slice(start, start + _BLOCK_ROWS))
        out = np.empty((Z.shape[0], len(prepared)), dtype=np.int64)
        for j, ((C, center_sq), cols) in enumerate(zip(prepared, columns, strict=True)):
            Zj = Z if cols is None else Z[:, cols]
            out[:, j] = nearest_rows(Zj, C, center_sq)
        return out

    labels = np.concatenate(map_threads(block, range(0, n_samples, _BLOCK_ROWS), n_jobs or 1))
    return labels[:, 0], labels[:, 1:]


def _joint_rows(space: JointSpace, Xs: Sequence, rows: np.ndarray, n_jobs: int):
    """``space.transform(Xs, rows)`` by blocks of the rows in threads (row by row the same):
    CSR where a view is sparse, unless dense views beside it fill the rows (:data:`_DENSE_SHARE`:
    k-means rounds on BLAS)."""
    if any(sp.issparse(X) for X in Xs):
        Z = sp.vstack(map_blocks(lambda part: space.transform(Xs, rows[part]), len(rows),
                                 n_jobs), format="csr")
        return Z.toarray() if Z.nnz * _DENSE_SHARE >= Z.shape[0] * Z.shape[1] else Z
    return fill_blocks(np.empty((len(rows), sum(X.shape[1] for X in Xs)), dtype=np.float32),
                       lambda part: space.transform(Xs, rows[part]), n_jobs)


@on_one_blas_thread
def joint_ensemble(Xs: Sequence, metrics: Sequence[str], n_clusters: int, *, seed: int,
                   n_members: int, member_k: tuple[int, int],
                   feature_ratio: tuple[float, float], n_jobs: int | None = None,
                   space: JointSpace | None = None) -> JointEnsemble:
    """k-means in the joint space: the candidate (k-means++ starts, the lowest inertia kept)
    and ``n_members`` members, each on a random share of the joint features with its own k.

    Up to :data:`JOINT_SAMPLE` samples (at least :data:`JOINT_PER_CLUSTER` a cluster) each
    runs on every sample; above, at most :data:`JOINT_SAMPLED_ROUNDS` rounds on one uniform
    sample of that many, and every sample is then assigned to the nearest centres (linear
    in N). Where the cuts are heavy (:func:`fastmice._best.heavy_cuts`: large k) the
    candidate also starts once and runs at most that many rounds.

    Parameters
    ----------
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
    metrics : sequence of str
        Each view's metric (resolved).
    n_clusters : int
    seed : int
        Root seed of the ensemble (the joint step draws from its own streams of it).
    n_members : int
    member_k : (int, int)
        Range of the members' numbers of clusters (as the base clusterings').
    feature_ratio : (float, float)
        Range of the share of joint features a member clusters on.
    n_jobs : int, optional
        Threads (the candidate and the members side by side); the result does not depend
        on it.
    space : JointSpace, optional
        The views' joint space, if already fitted (:func:`fit_joint_space`).

    Returns
    -------
    joint : JointEnsemble
    """
    with stage("joint"):
        n_samples = Xs[0].shape[0]
        rng = group_rng(seed, JOINT_STREAM)
        if space is None:
            space = fit_joint_space(Xs, metrics, n_jobs or 1)
        sample = max(JOINT_SAMPLE, JOINT_PER_CLUSTER * (member_k[1] if n_members
                                                         else n_clusters))
        sampled = n_samples > sample
        short = sampled or heavy_cuts(n_clusters, n_samples)
        rows = np.sort(rng.choice(n_samples, sample, replace=False)) if sampled \
            else np.arange(n_samples)
        Z = _joint_rows(space, Xs, rows, n_jobs or 1)
        n_features = Z.shape[1]
        n_init = 1 if short else JOINT_N_INIT
        # Every draw is made here, in order: the k-means may then run side by side.
        work = [(None, min(n_clusters, len(rows)),
                 [int(rng.integers(np.iinfo(np.int32).max)) for _ in range(n_init)])]
        for _ in range(n_members):
            ratio = rng.uniform(*feature_ratio)
            columns = np.sort(rng.choice(n_features, max(1, math.ceil(ratio * n_features)),
                                         replace=False))
            k = min(int(rng.integers(member_k[0], member_k[1] + 1)), len(rows))
            work.append((columns, k, [int(rng.integers(np.iinfo(np.int32).max))]))

        def run(item: tuple) -> tuple[float, np.ndarray, np.ndarray]:
            columns, k, seeds = item
            return joint_kmeans(Z if columns is None else Z[:, columns], k, seeds, n_jobs or 1,
                                JOINT_SAMPLED_ROUNDS if short else JOINT_MAX_ITER,
                                subsample_start=short)

        runs = map_threads(run, work, n_jobs or 1)
        columns = [item[0] for item in work[1:]]
        centers = [result[2] for result in runs]
        if sampled:
            labels, member_labels = _nearest_centres(Xs, space, [None, *columns], centers,
                                                     n_jobs)
        else:
            labels = runs[0][1].astype(np.int64)
            member_labels = np.column_stack([r[1] for r in runs[1:]]).astype(np.int64) \
                if n_members else np.empty((n_samples, 0), dtype=np.int64)
        return JointEnsemble(space, centers[0], labels, columns, centers[1:], member_labels)
