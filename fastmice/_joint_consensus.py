"""The best mode's consensus with its joint-space part (:mod:`fastmice._joint`).

The joint k-means on every feature of every view replaces the consensus cut only if it
agrees better with the weighted base clusterings (the ensemble's own objective, from the
data alone), or less well by at most ``CHOICES.joint_tie`` (one NMI point: a tie the
objective cannot break), or where it agrees better with held-out members than a consensus
of the others does (``CHOICES.joint_heldout``: the consensus is scored on the members it
was built from, an advantage that wins the in-sample comparison where every member is
weak): where the views each see the clusters the consensus stays; where the consensus cut
went wrong (a pair of clusters merged, a few samples split off) and the joint space
separates the clusters, the candidate wins. Optionally
(``CHOICES.joint_members_share``, off by default) members of k-means on random shares of
the joint features join the base clusterings in the consensus graph.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs

from fastmice import _best
from fastmice._auto_k_graph import choose_n_clusters_joint
from fastmice._best import weighted_agreement
from fastmice._blas import on_one_blas_thread
from fastmice._consensus import ConsensusPartition, consensus_partition
from fastmice._joint import JOINT_STREAM, JointSpace, fit_joint_space, joint_ensemble
from fastmice._joint_kmeans import joint_kmeans
from fastmice._joint_polish import polished_candidate
from fastmice._joint_spectral import spectral_candidate, spectral_due, with_spectral_candidate
from fastmice._parallel import map_threads
from fastmice._params import AUTO, EnsembleParams
from fastmice._specs import group_rng
from fastmice._stages import stage

__all__ = ["agreements", "choose_by_agreement", "consensus_is_noise", "consensus_with_joint",
           "explained_share", "heldout_prefers_joint", "joint_members", "null_share"]

#: Rows the noise check measures on: at most this many, and at least
#: :data:`NULL_PER_CLUSTER` a cluster (a uniform sample; every row if fewer).
NULL_SAMPLE, NULL_PER_CLUSTER = 2_000, 10
#: Lloyd rounds of the null's k-means (from a k-means++ start).
NULL_ROUNDS = 10
#: The check's stream under the joint step's (rows, column shuffles, k-means++ start).
NULL_STREAM = 1
#: The held-out check's stream under the joint step's (rows; each half's consensus its own).
HELDOUT_STREAM = 2
#: Rows the held-out check measures on: at most this many, and at least
#: :data:`HELDOUT_PER_CLUSTER` a cluster (a uniform sample; every row if fewer).
HELDOUT_SAMPLE, HELDOUT_PER_CLUSTER = 5_000, 50
#: Rows x clusters of the check's sample from which each half's consensus uses every
#: thread, not one (its k-means assignments: rows x clusters x width products).
HELDOUT_THREADED_WORK = 1_000_000


def explained_share(Z, labels: np.ndarray) -> float:
    """Share of the total variance of the rows ``Z`` (n, d; dense or CSR) that the means of
    the clusters ``labels`` (n,) explain: 1 - within-cluster / total sum of squares."""
    _, labels = np.unique(labels, return_inverse=True)
    n_rows = Z.shape[0]
    indicator = sp.csr_matrix((np.ones(n_rows), (labels, np.arange(n_rows))),
                              shape=(int(labels.max()) + 1, n_rows))
    sums = indicator @ Z
    sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums, dtype=np.float64)
    counts = np.asarray(indicator.sum(axis=1)).ravel()
    squares = float(Z.multiply(Z).sum()) if sp.issparse(Z) \
        else float(np.einsum("ij,ij->", Z, Z, dtype=np.float64))
    total = squares - float(sums.sum(axis=0) @ sums.sum(axis=0)) / n_rows
    between = float(np.sum(np.einsum("ij,ij->i", sums, sums) / counts)) - \
        float(sums.sum(axis=0) @ sums.sum(axis=0)) / n_rows
    return between / total if total > 0 else 0.0


def null_share(Z, n_clusters: int, rng: np.random.Generator, n_jobs: int = 1) -> float:
    """:func:`explained_share` of k-means (``n_clusters``) on ``Z`` with every column
    shuffled on its own: the same features without cluster structure, what k-means finds
    in noise. A sparse ``Z`` keeps each column's values at random rows."""
    if sp.issparse(Z):
        coo = Z.tocoo()
        shuffled = sp.csr_matrix((coo.data, (rng.integers(0, Z.shape[0], coo.nnz), coo.col)),
                                 shape=Z.shape, dtype=np.float32)
    else:
        shuffled = rng.permuted(Z, axis=0)
    seed = int(rng.integers(np.iinfo(np.int32).max))
    _, labels, _ = joint_kmeans(shuffled, min(n_clusters, Z.shape[0]), [seed], n_jobs, NULL_ROUNDS)
    return explained_share(shuffled, labels)


@on_one_blas_thread
def consensus_is_noise(Xs: Sequence, space: JointSpace, consensus_labels: np.ndarray,
                       joint_labels: np.ndarray, n_clusters: int, *, seed: int,
                       n_jobs: int = 1) -> bool:
    """Whether the consensus explains less of the joint space than k-means explains of the
    same space with its columns shuffled (:func:`null_share`), while the joint k-means
    explains more: the consensus is then no better than noise there and the joint
    candidate is kept. Measured on one uniform sample of rows (:data:`NULL_SAMPLE`).

    Parameters
    ----------
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
    space : JointSpace
    consensus_labels, joint_labels : ndarray of shape (n_samples,)
    n_clusters : int
    seed : int
        Root seed (the check draws from its own stream of it).
    n_jobs : int
        Threads of the null's k-means; the result does not depend on it.
    """
    with stage("joint_check"):
        rng = group_rng(seed, JOINT_STREAM, NULL_STREAM)
        n_samples = len(consensus_labels)
        size = min(n_samples, max(NULL_SAMPLE, NULL_PER_CLUSTER * n_clusters))
        rows = np.sort(rng.choice(n_samples, size, replace=False)) if size < n_samples \
            else np.arange(n_samples)
        Z = space.transform(Xs, rows)
        null = null_share(Z, n_clusters, rng, n_jobs)
        return explained_share(Z, consensus_labels[rows]) < null < \
            explained_share(Z, joint_labels[rows])


def agreements(consensus_labels: np.ndarray, joint_labels: np.ndarray,
               base_labels: np.ndarray, weights: np.ndarray,
               n_jobs: int = 1) -> tuple[float, float]:
    """The weighted agreement (:func:`weighted_agreement`) of the consensus labels and of the
    joint-space labels with the base clusterings, in that order.

    Parameters
    ----------
    consensus_labels, joint_labels : ndarray of shape (n_samples,)
    base_labels : ndarray of shape (n_samples, n_members)
    weights : ndarray of shape (n_members,)
    n_jobs : int, default=1
        Threads (one NMI a member each); the result does not depend on it.
    """
    return (weighted_agreement(consensus_labels, base_labels, weights, n_jobs),
            weighted_agreement(joint_labels, base_labels, weights, n_jobs))


def _by_agreement(consensus: float, joint: float, tie: float) -> str:
    return "joint" if joint > consensus - tie else "consensus"


def choose_by_agreement(consensus_labels: np.ndarray, joint_labels: np.ndarray,
                        base_labels: np.ndarray, weights: np.ndarray, n_jobs: int = 1,
                        tie: float = 0.0) -> str:
    """``"joint"`` if the joint-space labels agree with the weighted base clusterings
    better than the consensus labels do (:func:`agreements`), or less well by at most
    ``tie`` (NMI the candidate may lack and still be kept); else ``"consensus"``."""
    return _by_agreement(*agreements(consensus_labels, joint_labels, base_labels, weights,
                                     n_jobs), tie)


def _heldout_due(lead: float, n_members: int) -> bool:
    """Whether the held-out check runs (``CHOICES.joint_heldout``, at least 4 members, the
    consensus's in-sample ``lead`` at most ``CHOICES.joint_heldout_window``)."""
    choices = _best.CHOICES
    return choices.joint_heldout is not None and n_members >= 4 and \
        lead <= choices.joint_heldout_window


def heldout_prefers_joint(joint_labels: np.ndarray, members: np.ndarray,
                          weights: np.ndarray, n_clusters: int, *, seed: int,
                          n_jobs: int = 1, margin: float = 0.01) -> bool:
    """Whether the joint labels agree with held-out members better, by more than
    ``margin``, than a consensus of the other members does.

    The members split in two halves (even and odd columns); each half's consensus (the best
    mode's, :func:`fastmice.consensus_partition`) is scored by its weighted agreement
    (:func:`weighted_agreement`) with the other half, and so are the joint labels; the two
    halves' scores are averaged. On a uniform sample of ``max(HELDOUT_SAMPLE,
    HELDOUT_PER_CLUSTER * k)`` rows where there are more. The two consensuses run side by
    side, each on one thread where the sample is small (more threads per cut only add
    their overhead), else sharing all ``n_jobs`` (20,000 rows at k = 400: the threads that
    are not running a half help with the row blocks of the other).

    Parameters
    ----------
    joint_labels : ndarray of shape (n_samples,)
    members : ndarray of shape (n_samples, n_members)
        Base labels (-1: the member knows nothing of the sample); at least 4 members.
    weights : ndarray of shape (n_members,)
        The members' weights in the consensus of all of them.
    n_clusters : int
    seed : int
        Root seed of the ensemble (the check draws from its own stream of it).
    n_jobs : int, default=1
        Threads; the result does not depend on it.
    margin : float, default=0.01
    """
    n_samples, n_members = members.shape
    if n_members < 4:
        raise ValueError(f"the held-out check needs at least 4 members; got {n_members}.")
    rng = group_rng(seed, JOINT_STREAM, HELDOUT_STREAM)
    size = max(HELDOUT_SAMPLE, HELDOUT_PER_CLUSTER * n_clusters)
    if n_samples > size:
        rows = np.sort(rng.choice(n_samples, size, replace=False))
        members, joint_labels = members[rows], joint_labels[rows]
    half_seeds = rng.integers(0, 2**31 - 1, size=2)
    inner_jobs = n_jobs if len(members) * n_clusters >= HELDOUT_THREADED_WORK else 1
    halves = (np.arange(0, n_members, 2), np.arange(1, n_members, 2))

    def scores(half: int) -> tuple[float, float]:
        built, held = halves[half], halves[1 - half]
        consensus = consensus_partition(members[:, built], n_clusters,
                                        seed=int(half_seeds[half]), n_jobs=inner_jobs,
                                        mode="best").labels_
        return (weighted_agreement(consensus, members[:, held], weights[held]),
                weighted_agreement(joint_labels, members[:, held], weights[held]))

    (consensus_a, joint_a), (consensus_b, joint_b) = map_threads(scores, (0, 1), n_jobs)
    return (joint_a + joint_b) / 2 > (consensus_a + consensus_b) / 2 + margin


def joint_members(n_groups: int) -> int:
    """Members of the joint part for an ensemble of ``n_groups`` view groups
    (``CHOICES.joint_members_share`` of them: extending the ensemble extends them too)."""
    return math.ceil(n_groups * _best.CHOICES.joint_members_share)


def _member_k(params: EnsembleParams, n_samples: int) -> tuple[int, int]:
    """The range the base clusterings draw their k from (:func:`fastmice._best.base_k_range`)."""
    k = params.reference_k(n_samples)
    low = max(1, math.ceil(params.base_clusters[0] * k))
    high = max(low, math.floor(params.base_clusters[1] * k))
    return _best.base_k_range(low, high, n_samples, "best")


def _joint_or_consensus(Xs: Sequence, found: ConsensusPartition, joint, members: np.ndarray,
                        *, seed: int, n_jobs: int) -> str:
    """``"joint"`` where the joint candidate wins (by agreement, within the tie, where the
    consensus is noise or by the held-out check), else ``"consensus"``."""
    consensus_agreement, joint_agreement = agreements(
        found.labels_, joint.labels_, members, found.member_weights, n_jobs)
    source = _by_agreement(consensus_agreement, joint_agreement, _best.CHOICES.joint_tie)
    if source == "consensus" and _best.CHOICES.joint_null and consensus_is_noise(
            Xs, joint.space, found.labels_, joint.labels_, found.n_clusters, seed=seed,
            n_jobs=n_jobs):
        source = "joint"
    if source == "consensus" and _heldout_due(consensus_agreement - joint_agreement,
                                              members.shape[1]) and \
            heldout_prefers_joint(joint.labels_, members, found.member_weights,
                                  found.n_clusters, seed=seed, n_jobs=n_jobs,
                                  margin=_best.CHOICES.joint_heldout):
        source = "joint"
    return source


def _spectral_part(Xs: Sequence, found: ConsensusPartition, joint, labels: np.ndarray,
                   members: np.ndarray, *, seed: int, n_jobs: int, prepared: tuple | None):
    """The joint part holding the spectral candidate where it wins against ``labels``
    (:func:`fastmice._joint_spectral.with_spectral_candidate`), else None."""
    def heldout(candidate: np.ndarray, lead: float) -> bool:
        return _best.CHOICES.spectral_heldout and _heldout_due(lead, members.shape[1]) and \
            heldout_prefers_joint(candidate, members, found.member_weights, found.n_clusters,
                                  seed=seed, n_jobs=n_jobs, margin=_best.CHOICES.joint_heldout)

    return with_spectral_candidate(joint, Xs, labels, members, found.member_weights,
                                   seed=seed, n_jobs=n_jobs, heldout=heldout, prepared=prepared)


def _consensus_and_source(Xs: Sequence, members: np.ndarray, joint, params: EnsembleParams,
                          choice, init: ConsensusPartition | None, *, seed: int,
                          n_jobs: int) -> tuple:
    """The best mode's consensus of ``members``, where its labels come from (``source``),
    the joint part (polished where it wins) and the labels, before the spectral candidate."""
    found = consensus_partition(members, params.n_clusters, seed=seed, n_jobs=n_jobs,
                                init=init, mode="best")
    found = found if choice is None else replace(found, k_choice=choice)
    if init is not None:
        source = init.source
    elif not _best.CHOICES.joint_candidate or params.n_clusters == AUTO or \
            found.n_clusters != joint.centers.shape[0]:
        source = "consensus"  # (with "auto", the candidate was made for another k)
    else:
        source = _joint_or_consensus(Xs, found, joint, members, seed=seed, n_jobs=n_jobs)
    if source == "joint" and init is None:
        joint = polished_candidate(joint, Xs, members, found.member_weights, seed=seed,
                                   n_starts=_best.CHOICES.joint_kept_starts, n_jobs=n_jobs)
    labels = joint.labels_ if source in ("joint", "spectral") else found.labels_
    return found, source, joint, labels


def consensus_with_joint(Xs: Sequence, base_labels: np.ndarray, params: EnsembleParams, *,
                         n_jobs: int | None = None,
                         init: ConsensusPartition | None = None) -> ConsensusPartition:
    """The consensus of the view groups' base clusterings; in the best mode with the joint
    part (the candidate; members too where ``CHOICES.joint_members_share`` > 0).

    Parameters
    ----------
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
        The views (read a block of rows at a time).
    base_labels : ndarray of shape (n_samples, n_groups)
    params : EnsembleParams
        The run's, for this data, metrics resolved.
    n_jobs : int, optional
        Threads; the result does not depend on it.
    init : ConsensusPartition, optional
        The consensus of the same view groups over fewer samples, to refine (the joint part
        then labels every sample with its stored centres).

    Returns
    -------
    consensus : ConsensusPartition
        With ``joint`` and ``source`` set in the best mode.
    """
    n_samples = base_labels.shape[0]
    seed = params.root_seed
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else effective_n_jobs(n_jobs)
    wanted = joint_members(params.n_groups) > 0 or _best.CHOICES.joint_candidate
    if params.mode != "best" or (init is None and not wanted) or \
            (init is not None and init.joint is None):
        return consensus_partition(base_labels, params.n_clusters, seed=seed, n_jobs=n_jobs,
                                   init=init, mode=params.mode)
    choice = space = None  # "auto": k read off the joint space's neighbour graph, then
    if params.n_clusters == AUTO and init is None:  # the joint part as for that k
        space = fit_joint_space(Xs, params.metric, n_jobs)
        choice = choose_n_clusters_joint(Xs, params.metric, seed=seed, n_jobs=n_jobs,
                                         space=space)
        params = replace(params, n_clusters=choice.n_clusters)
    if init is not None:
        candidate, members = init.joint.predict(Xs, n_jobs)
        joint = replace(init.joint, labels_=candidate, member_labels_=members)
    else:
        joint = joint_ensemble(Xs, params.metric, params.reference_k(n_samples)
                               if params.n_clusters == AUTO else params.n_clusters,
                               seed=seed, n_members=joint_members(params.n_groups),
                               member_k=_member_k(params, n_samples),
                               feature_ratio=params.feature_ratio, n_jobs=n_jobs,
                               space=space)
    members = np.hstack([base_labels, joint.member_labels_])
    # The spectral candidate depends on the joint space and the seed alone: where it may be
    # tried, it is made beside the consensus and the choice of the labels' source.
    tasks = [lambda: _consensus_and_source(Xs, members, joint, params, choice, init, seed=seed,
                                           n_jobs=n_jobs)]
    if init is None and spectral_due(n_samples, joint.centers.shape[0]):
        tasks.append(lambda: spectral_candidate(joint, Xs, n_samples, seed=seed, n_jobs=n_jobs))
    (found, source, joint, labels), *prepared = map_threads(lambda task: task(), tasks, n_jobs)
    if init is None and found.n_clusters == joint.centers.shape[0] and \
            spectral_due(n_samples, found.n_clusters):
        spectral = _spectral_part(Xs, found, joint, labels, members, seed=seed, n_jobs=n_jobs,
                                  prepared=prepared[0] if prepared else None)
        if spectral is not None:
            joint, source, labels = spectral, "spectral", spectral.labels_
    return replace(found, labels_=labels, joint=joint, source=source)
