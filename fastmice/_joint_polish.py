"""The kept joint candidate given the k-means its choice went without.

The best mode chooses between the consensus cut and the joint candidate
(:mod:`fastmice._joint_consensus`) on a cheap candidate: three k-means++ starts on every
sample, or one short start on a sample of many samples. Once kept, the candidate gets what
the choice saved (CODE_VERSION 20; docs/quality.md, "The kept candidate's starts"): more
starts on every sample, or, on a sample, its rounds continued there side by side with
further starts (CODE_VERSION 22), the lowest inertia then continued on every sample,
streamed a block of rows at a time. On every sample a lower inertia alone is not
enough: where the joint k-means objective is nearly flat (text), it is a coin toss, so the
new candidate must also agree with the weighted members at least as well (the ensemble's
objective). On a sample, a lower inertia over every sample is enough (CODE_VERSION 21):
measured on that many rows it is no coin toss, and where the views are weak the members
are no witness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from fastmice import _best, _joint
from fastmice._best import weighted_agreement
from fastmice._blas import on_one_blas_thread
from fastmice._joint import JOINT_STREAM, JointEnsemble, JointSpace, nearest_rows
from fastmice._joint_kmeans import inertia as joint_inertia
from fastmice._joint_kmeans import joint_kmeans
from fastmice._kmeans import lloyd_rounds
from fastmice._parallel import map_threads
from fastmice._rows import MatrixRows
from fastmice._specs import group_rng
from fastmice._stages import stage

__all__ = ["FULL_ROUNDS", "FULL_ROUNDS_WORK", "POLISH_STREAM", "SAMPLED_STARTS",
           "SAMPLED_STARTS_WORK", "SAMPLES_PER_START", "full_rounds",
           "polished_candidate", "streamed_inertia"]

#: The kept candidate's stream under the joint step's (its further starts, its sample).
POLISH_STREAM = 3
#: Most Lloyd rounds on every sample after the sample's (as many as on the sample; on the
#: harder paired shape 10 left 4 points of the 30's gain), and the multiply-adds a sample
#: may cost over all of them (joint features x k a round: 480 x 20 allows all 30; 2,672 x
#: 158, the most the heavy-cuts bound lets through, 4).
FULL_ROUNDS, FULL_ROUNDS_WORK = 30, 2_000_000
#: Further k-means++ starts on the continued sample; at most one per SAMPLES_PER_START
#: samples (a start costs as much whatever N: 3 at 25,000, 6 from 48,000) and within the
#: multiply-adds a sampled row may cost over all of their rounds (joint features x k x
#: JOINT_MAX_ITER a start: 480 x 20 allows all 6; 960 x 40, 1). On the harder paired variant
#: one short start missed the views-together partition on 4 of 16 design fits; 3 starts
#: fixed 2 of them, 6 all four.
SAMPLED_STARTS, SAMPLES_PER_START, SAMPLED_STARTS_WORK = 6, 8_000, 2_000_000
#: Rows put in the joint space and assigned at a time.
_BLOCK_ROWS = 8192


@on_one_blas_thread
def full_rounds(Xs: Sequence, space: JointSpace, centers: np.ndarray, n_rounds: int,
                n_jobs: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd rounds over every sample in the joint space, a block of rows at a time (never
    all rows at once): at most ``n_rounds``, until the labels no longer change.

    Parameters
    ----------
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
    space : JointSpace
    centers : ndarray of shape (n_clusters, n_joint_features)
        Where the rounds start.
    n_rounds : int
    n_jobs : int, default=1
        Threads (blocks of rows side by side); the result does not depend on it.

    Returns
    -------
    labels : ndarray of shape (n_samples,)
        Each sample's nearest centre among ``centers`` (returned): they agree.
    centers : ndarray of shape (n_clusters, n_joint_features), float32
        A cluster left empty keeps its centre.
    """
    n_samples, n_clusters = Xs[0].shape[0], centers.shape[0]
    centers = np.asarray(centers, dtype=np.float32)
    n_rounds, last = max(1, n_rounds), None
    for round_ in range(n_rounds):
        center_sq = np.einsum("ij,ij->i", centers, centers, dtype=np.float32)

        def block(start: int, centers=centers, center_sq=center_sq):
            Z = space.transform(Xs, slice(start, start + _BLOCK_ROWS))
            labels = nearest_rows(Z, centers, center_sq)
            indicator = sp.csr_matrix((np.ones(len(labels), dtype=np.float32),
                                       (labels, np.arange(len(labels)))),
                                      shape=(n_clusters, len(labels)))
            sums = indicator @ Z
            sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
            return labels, sums.astype(np.float64)

        parts = map_threads(block, range(0, n_samples, _BLOCK_ROWS), n_jobs)
        labels = np.concatenate([part[0] for part in parts])
        if round_ == n_rounds - 1 or (last is not None and np.array_equal(labels, last)):
            break  # the labels are each sample's nearest of these centres
        sums = parts[0][1]
        for part in parts[1:]:  # in block order: the same sums whatever the threads
            sums = sums + part[1]
        counts = np.bincount(labels, minlength=n_clusters)[:, None]
        centers = np.where(counts > 0, sums / np.maximum(counts, 1), centers).astype(np.float32)
        last = labels
    return labels.astype(np.int64), centers


@on_one_blas_thread
def streamed_inertia(Xs: Sequence, space: JointSpace,
                     partitions: Sequence[tuple[np.ndarray, np.ndarray]],
                     n_jobs: int = 1) -> np.ndarray:
    """k-means inertia over every sample in the joint space of each ``(labels, centers)``
    (centers: (n_clusters, n_joint_features)), shape (n_partitions,): a block of rows at a
    time, put in the joint space once for all of them; summed in block order."""
    def block(start: int) -> list[float]:
        rows = slice(start, start + _BLOCK_ROWS)
        Z = space.transform(Xs, rows)
        return [joint_inertia(Z, labels[rows], centers) for labels, centers in partitions]

    parts = np.asarray(map_threads(block, range(0, Xs[0].shape[0], _BLOCK_ROWS), n_jobs))
    return np.array([np.sum(np.ascontiguousarray(column)) for column in parts.T])


def _continued(joint: JointEnsemble, Xs: Sequence, sample: int, rng: np.random.Generator,
               n_jobs: int) -> tuple[np.ndarray, np.ndarray]:
    """The candidate's rounds continued on a uniform sample of ``sample`` rows to
    ``JOINT_MAX_ITER`` in all, side by side with further k-means++ starts of as many rounds
    there (:data:`SAMPLED_STARTS`), the lowest inertia on the sample then continued on every
    sample (:func:`full_rounds`)."""
    n_clusters, n_features = joint.centers.shape
    n_starts = min(SAMPLED_STARTS, Xs[0].shape[0] // SAMPLES_PER_START,
                   SAMPLED_STARTS_WORK // (_joint.JOINT_MAX_ITER * n_clusters * n_features))
    rows = np.sort(rng.choice(Xs[0].shape[0], sample, replace=False))
    seeds = [int(rng.integers(np.iinfo(np.int32).max)) for _ in range(n_starts)]
    Z = _joint._joint_rows(joint.space, Xs, rows, n_jobs)

    def run(start: int | None) -> tuple[float, np.ndarray, np.ndarray]:
        if start is not None:
            return joint_kmeans(Z, n_clusters, [start], 1, _joint.JOINT_MAX_ITER,
                                subsample_start=True)
        threads = 1 if seeds else n_jobs  # without starts beside it, it has every thread
        labels, centers = lloyd_rounds(MatrixRows(Z, cosine=False, n_jobs=threads),
                                       joint.centers,
                                       _joint.JOINT_MAX_ITER - _joint.JOINT_SAMPLED_ROUNDS,
                                       metric="sqeuclidean")
        return joint_inertia(Z, labels, centers, threads), labels, centers

    runs = map_threads(run, [None, *seeds], n_jobs)  # the candidate's rounds and the starts
    _, _, centers = min(runs, key=lambda run: run[0])  # the first of equal inertias
    n_rounds = min(FULL_ROUNDS, max(1, FULL_ROUNDS_WORK // centers.size))
    return full_rounds(Xs, joint.space, centers, n_rounds, n_jobs)


@on_one_blas_thread
def polished_candidate(joint: JointEnsemble, Xs: Sequence, members: np.ndarray,
                       weights: np.ndarray, *, seed: int, n_starts: int,
                       n_jobs: int = 1) -> JointEnsemble:
    """The kept candidate given the k-means its choice went without.

    On every sample (up to :data:`fastmice._joint.JOINT_SAMPLE`): ``n_starts`` k-means++
    starts in all, its own (:data:`fastmice._joint.JOINT_N_INIT`) and more from its own
    stream of ``seed``, the start of the lowest inertia the new candidate (kept only if its
    inertia is lower). On a sample (more samples): its rounds continue on a uniform sample
    to :data:`fastmice._joint.JOINT_MAX_ITER` in all, beside :data:`SAMPLED_STARTS` more
    k-means++ starts there (fewer where :data:`SAMPLES_PER_START` or
    :data:`SAMPLED_STARTS_WORK` says so); the lowest
    inertia on the sample then runs at most :data:`FULL_ROUNDS` on
    every sample (fewer where :data:`FULL_ROUNDS_WORK` says so). The new candidate replaces
    the kept one if the weighted members agree with it at least as well
    (:func:`weighted_agreement`), or, on a sample, if its inertia over every sample
    (:func:`streamed_inertia`) is lower. Unchanged where ``n_starts`` adds none or the cuts are
    heavy (:func:`fastmice._best.heavy_cuts` on the rows the k-means runs on: large k).

    Parameters
    ----------
    joint : JointEnsemble
        The candidate of :func:`fastmice._joint.joint_ensemble` on ``Xs``.
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
    members : ndarray of shape (n_samples, n_members)
        Base labels (-1: the member knows nothing of the sample).
    weights : ndarray of shape (n_members,)
        The members' weights in the consensus.
    seed : int
        Root seed of the ensemble.
    n_starts : int
    n_jobs : int, default=1
        Threads; the result does not depend on it.
    """
    n_samples, n_clusters = Xs[0].shape[0], joint.centers.shape[0]
    sample = max(_joint.JOINT_SAMPLE, _joint.JOINT_PER_CLUSTER * n_clusters)
    if n_starts <= _joint.JOINT_N_INIT or _best.heavy_cuts(n_clusters,
                                                            min(n_samples, sample)):
        return joint
    with stage("joint"):
        rng = group_rng(seed, JOINT_STREAM, POLISH_STREAM)
        if n_samples > sample:
            labels, centers = _continued(joint, Xs, sample, rng, n_jobs)
            new, old = streamed_inertia(Xs, joint.space, [(labels, centers),
                                                          (joint.labels_, joint.centers)], n_jobs)
            if new < old:
                return replace(joint, centers=centers, labels_=labels.astype(np.int64))
        else:
            seeds = [int(rng.integers(np.iinfo(np.int32).max))
                     for _ in range(n_starts - _joint.JOINT_N_INIT)]
            Z = _joint._joint_rows(joint.space, Xs, np.arange(n_samples), n_jobs)
            runs = map_threads(lambda start: joint_kmeans(Z, n_clusters, [start], 1,
                                                          _joint.JOINT_MAX_ITER), seeds, n_jobs)
            inertia, labels, centers = min(runs, key=lambda run: run[0])  # first of equals
            if inertia >= joint_inertia(Z, joint.labels_, joint.centers, n_jobs):
                return joint
        if weighted_agreement(labels, members, weights, n_jobs) < \
                weighted_agreement(joint.labels_, members, weights, n_jobs):
            return joint
        return replace(joint, centers=centers, labels_=labels.astype(np.int64))
