"""The best mode's spectral candidate: spectral clustering on the joint space's neighbour
graph, where clusters are small.

Where a cluster holds a few dozen samples (faces of a few photos each, a few hundred leaves
of a hundred species), the anchor graphs of random view groups and the k-means of the joint
space both blur it; the graph that links each sample to its 10 nearest samples in the joint
space (every feature of every view, each view on an equal footing) keeps it, and spectral
clustering on that graph (its k leading eigenvectors, rows normalised, k-means) finds it.
Where clusters hold hundreds of noisy samples the same graph's neighbourhoods are local
pieces of a cluster and k-means does better (docs/quality.md, "The spectral candidate").

So on at most :data:`SPECTRAL_MAX_SAMPLES` samples (the graph is dense: the one
:func:`fastmice._auto_k_graph.neighbour_graph` builds for ``n_clusters="auto"``), and where
clusters average at most ``CHOICES.spectral_cluster_size`` samples, the spectral labels
replace the best mode's labels if they agree better with the weighted base clusterings (the
ensemble's own objective, from the data alone). The joint part then holds them, with the
joint-space means of their clusters as centres (new samples go to the nearest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from fastmice import _best
from fastmice._auto_k_graph import GRAPH_SAMPLE, neighbour_graph
from fastmice._best import weighted_agreement
from fastmice._blas import on_one_blas_thread
from fastmice._joint import JOINT_MAX_ITER, JOINT_STREAM, JointEnsemble
from fastmice._joint_kmeans import joint_kmeans
from fastmice._kmeans import _centers
from fastmice._lapack import top_eigenpairs
from fastmice._rows import MatrixRows
from fastmice._specs import group_rng
from fastmice._stages import stage

__all__ = ["SPECTRAL_MAX_SAMPLES", "spectral_candidate", "spectral_due", "spectral_labels",
           "with_spectral_candidate"]

#: Most samples the spectral candidate is tried on (a dense graph of every sample).
SPECTRAL_MAX_SAMPLES = GRAPH_SAMPLE
#: k-means starts on the spectral embedding (the lowest inertia kept).
SPECTRAL_N_INIT = 10
#: The candidate's stream under the joint step's (after the noise check's, the held-out
#: check's and the polish's).
SPECTRAL_STREAM = 4


def spectral_due(n_samples: int, n_clusters: int) -> bool:
    """Whether the spectral candidate is tried: at most :data:`SPECTRAL_MAX_SAMPLES`
    samples and at most ``CHOICES.spectral_cluster_size`` of them a cluster on average."""
    size = _best.CHOICES.spectral_cluster_size
    return size > 0 and 3 <= n_samples <= SPECTRAL_MAX_SAMPLES and \
        2 <= n_clusters < n_samples and n_samples <= size * n_clusters


@on_one_blas_thread
def spectral_labels(Z, n_clusters: int, *, seed: int, n_jobs: int = 1) -> np.ndarray | None:
    """Spectral clustering of the rows of ``Z`` on their normalised neighbour graph.

    Parameters
    ----------
    Z : ndarray or CSR matrix of shape (n_rows, n_features)
        Joint rows (every sample).
    n_clusters : int
    seed : int
        Root seed of the ensemble (the candidate draws from its own stream of it).
    n_jobs : int, default=1
        Threads of the k-means; the result does not depend on it.

    Returns
    -------
    labels : ndarray of shape (n_rows,) or None
        None where the k-means leaves a cluster empty.
    """
    rng = group_rng(seed, JOINT_STREAM, SPECTRAL_STREAM)
    seeds = [int(s) for s in rng.integers(0, np.iinfo(np.int32).max, SPECTRAL_N_INIT + 1)]
    # The rows' own distances: on at most 2,000 rows a search as cheap as the SVD.
    W = neighbour_graph(Z, seeds[0], reduce=False).astype(np.float32)
    _, vectors = top_eigenpairs(W, n_clusters)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    U = np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1), dtype=np.float32)
    _, labels, _ = joint_kmeans(U, n_clusters, seeds[1:], n_jobs, JOINT_MAX_ITER)
    return labels if len(np.unique(labels)) == n_clusters else None


def spectral_candidate(joint: JointEnsemble, Xs: Sequence, n_samples: int, *, seed: int,
                       n_jobs: int = 1) -> tuple[np.ndarray, np.ndarray | None]:
    """The joint rows of every sample, shape (n_samples, n_features), and their spectral
    labels (:func:`spectral_labels`; None where a cluster is left empty)."""
    with stage("joint"):
        Z = joint.space.transform(Xs, np.arange(n_samples))
        return Z, spectral_labels(Z, joint.centers.shape[0], seed=seed, n_jobs=n_jobs)


def with_spectral_candidate(joint: JointEnsemble, Xs: Sequence, labels: np.ndarray,
                            members: np.ndarray, weights: np.ndarray, *, seed: int,
                            n_jobs: int = 1, heldout=None,
                            prepared: tuple | None = None) -> JointEnsemble | None:
    """The joint part holding the spectral candidate, if it agrees better with the weighted
    members than ``labels`` do (or ``heldout(candidate, lead)`` says so, ``lead`` the
    labels' lead in agreement); else None.

    Parameters
    ----------
    joint : JointEnsemble
        The best mode's joint part (its space; its candidate is replaced).
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
    labels : ndarray of shape (n_samples,)
        The labels the best mode would give.
    members : ndarray of shape (n_samples, n_members)
    weights : ndarray of shape (n_members,)
    seed : int
    n_jobs : int, default=1
        Threads; the result does not depend on it.
    prepared : tuple, optional
        What :func:`spectral_candidate` gives for ``joint`` (made beforehand).
    """
    n_clusters = joint.centers.shape[0]
    Z, candidate = prepared if prepared is not None else \
        spectral_candidate(joint, Xs, len(labels), seed=seed, n_jobs=n_jobs)
    if candidate is None:
        return None
    with stage("joint"):
        lead = weighted_agreement(labels, members, weights, n_jobs) - \
            weighted_agreement(candidate, members, weights, n_jobs)
        if lead >= 0 and not (heldout is not None and heldout(candidate, lead)):
            return None
        # The clusters' means, as the joint k-means makes its centres.
        centers = _centers(MatrixRows(Z, cosine=False, n_jobs=n_jobs), candidate, n_clusters)
        return replace(joint, labels_=candidate, centers=centers)
