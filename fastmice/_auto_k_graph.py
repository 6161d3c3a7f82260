"""``n_clusters="auto"`` in the best mode: k from the eigengap of a neighbour graph of the
joint space.

The view groups' base clusterings see a few coarse groups well and many fine ones badly
(each sees a random share of some views' features, and few of them are fine enough), so
the eigengap of their consensus graph (:mod:`fastmice._auto_k`) fails from k of about 40.
The joint space (every feature of every view, each view on an equal footing:
:mod:`fastmice._joint`) is the witness of fine structure: where the samples form k groups,
the graph that links each sample to its nearest neighbours there falls into k weakly joined
parts, and its normalised adjacency has k eigenvalues near 1 and a gap after them.

The rule, on a uniform sample of at most :data:`GRAPH_SAMPLE` rows (cost fixed in N beyond
one pass over the data for the joint space's means and scales):

1. the sample's joint rows, reduced to their :data:`GRAPH_DIMS` leading singular directions
   (randomised SVD) where wider and more;
2. the symmetrised graph of each row's :data:`GRAPH_NEIGHBOURS` nearest rows, Gaussian
   weights ``exp(-d^2 / (2 s^2))`` with ``s`` the mean neighbour distance;
3. the eigenvalues ``1 = l_1 >= l_2 >= ...`` of ``D^-1/2 W D^-1/2``; the score of k is
   ``(l_k - l_(k+1)) * ln(k) ** 0.5`` for k from 2 to ``ceil(n / 10)`` (n the sampled rows:
   up to N / 10, and 200 above 2,000 samples); the largest score wins.

Chosen on the design part of ``benchmarks/k_auto.py`` against the consensus graph's eigengap
and the view groups' anchor graphs, confirmed on its confirmation part and fresh family
(docs/quality.md, "Choosing k").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from fastmice._auto_k import KChoice
from fastmice._blas import on_one_blas_thread
from fastmice._joint import JointSpace, fit_joint_space

__all__ = ["GRAPH_SAMPLE", "JOINT_RULE", "choose_n_clusters_joint", "eigengap_choice",
           "graph_eigengap_choice", "nearest_rows", "neighbour_graph", "normalised_graph",
           "reduced_rows", "sampled_rows"]

#: Rows of the joint space the graph is built on, at most (a dense eigenproblem of this
#: size: about 0.8 s on one core).
GRAPH_SAMPLE = 2000
#: Leading singular directions the sampled rows are reduced to before the neighbour search.
GRAPH_DIMS = 256
#: Neighbours of each row in the graph.
GRAPH_NEIGHBOURS = 10
#: Weight of the gap: ``ln(k) ** GAP_POWER``.
GAP_POWER = 0.5
#: Candidates run up to ``ceil(n_rows / MAX_K_DIVISOR)``.
MAX_K_DIVISOR = 10
#: What :func:`choose_n_clusters_joint` scores, in words (printed and reported with its choice).
JOINT_RULE = (f"the eigengap after the k-th eigenvalue of the {GRAPH_NEIGHBOURS}-nearest-neighbour "
              f"graph of the joint space (at most {GRAPH_SAMPLE:,} rows), times "
              f"ln(k)^{GAP_POWER}")
#: The sample's stream under the root seed (a sub-stream of the consensus stream, 1).
_SAMPLE_STREAM = (1, 2)


def reduced_rows(Z, seed: int, reduce: bool = True):
    """The rows of ``Z`` (shape (n_rows, n_features), dense or CSR) as the graph's
    neighbours are searched in: float64, reduced to their :data:`GRAPH_DIMS` leading singular
    directions (randomised SVD seeded with ``seed``) where wider and more (``reduce=False``:
    as they are)."""
    from sklearn.decomposition import TruncatedSVD

    # (fewer rows than GRAPH_DIMS span fewer directions: the SVD would keep every distance)
    if reduce and Z.shape[1] > GRAPH_DIMS and Z.shape[0] > GRAPH_DIMS:
        Z = TruncatedSVD(GRAPH_DIMS, algorithm="randomized", n_iter=4,
                         random_state=seed).fit_transform(Z)
    return sp.csr_matrix(Z, dtype=np.float64) if sp.issparse(Z) else \
        np.asarray(Z, dtype=np.float64)


def nearest_rows(Z) -> tuple[np.ndarray, np.ndarray]:
    """Distances and indices, each of shape (n_rows, m), of every row's ``m`` nearest other
    rows of ``Z``, ``m = min(GRAPH_NEIGHBOURS, n_rows - 1)``."""
    from sklearn.neighbors import NearestNeighbors

    # One OpenMP thread: scikit-learn's search merges per-thread heaps on few rows, which
    # could order equal distances (duplicate rows) by the machine's number of cores.
    with threadpool_limits(limits=1, user_api="openmp"):
        return NearestNeighbors(n_neighbors=min(GRAPH_NEIGHBOURS, Z.shape[0] - 1)
                                ).fit(Z).kneighbors()


def normalised_graph(weights: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``D^-1/2 W D^-1/2`` of the symmetrised graph whose row i links to ``indices[i]``
    with ``weights[i]`` (both of shape (n_rows, m)): dense, shape (n_rows, n_rows)."""
    n_rows, m = indices.shape
    W = sp.csr_matrix((weights.ravel() + 1e-12, indices.ravel(),
                       np.arange(0, n_rows * m + 1, m)), shape=(n_rows, n_rows))
    W = (W + W.T).toarray()
    scale = 1.0 / np.sqrt(W.sum(axis=1))
    W *= scale[:, None]
    W *= scale[None, :]
    return W


def neighbour_graph(Z, seed: int, reduce: bool = True) -> np.ndarray:
    """The normalised neighbour graph ``D^-1/2 W D^-1/2`` of the rows of ``Z`` (shape
    (n_rows, n_features), dense or CSR): dense, shape (n_rows, n_rows), symmetric (see the
    module docstring, steps 1-2; ``reduce=False``: the neighbours by the rows' own
    distances, without the SVD)."""
    distances, indices = nearest_rows(reduced_rows(Z, seed, reduce))
    width = float(np.mean(distances))
    weights = np.exp(-distances**2 / (2 * width**2)) if width > 0 else np.ones_like(distances)
    return normalised_graph(weights, indices)


def eigengap_choice(W: np.ndarray) -> KChoice:
    """k by the eigengap of the normalised graph ``W`` (shape (n_rows, n_rows), n_rows >=
    4): candidates ``2 .. max(2, ceil(n_rows / 10))`` (at most ``n_rows - 2``), scored
    ``(l_k - l_(k+1)) * ln(k) ** GAP_POWER``."""
    n_rows = W.shape[0]
    k_max = max(2, min(math.ceil(n_rows / MAX_K_DIVISOR), n_rows - 2))
    count = min(k_max + 1, n_rows)
    # Single precision: 2.7x faster than double on one core, and the gaps that decide are
    # far above its rounding (1e-7 of the eigenvalues, which are at most 1).
    values = scipy.linalg.eigh(W.astype(np.float32), subset_by_index=[n_rows - count, n_rows - 1],
                               eigvals_only=True, driver="evr")[::-1].astype(np.float64)
    candidates = np.arange(2, k_max + 1)
    scores = (values[candidates - 1] - values[candidates]) * np.log(candidates) ** GAP_POWER
    return KChoice(int(candidates[np.argmax(scores)]), candidates, scores, JOINT_RULE)


def graph_eigengap_choice(Z, seed: int) -> KChoice:
    """k by the eigengap of the neighbour graph of the rows ``Z`` (see the module docstring).

    Parameters
    ----------
    Z : ndarray or CSR matrix of shape (n_rows, n_features)
        Rows to cluster (the joint space's, sampled), at least 4.
    seed : int
        Seed of the randomised SVD.

    Returns
    -------
    choice : KChoice
        Candidates ``2 .. max(2, ceil(n_rows / 10))`` (at most ``n_rows - 2``) and their
        scores.
    """
    return eigengap_choice(neighbour_graph(Z, seed))


def sampled_rows(n_samples: int, seed: int) -> tuple[np.ndarray, int]:
    """The rows the graph is built on (every row, or a uniform sample of
    :data:`GRAPH_SAMPLE`, sorted) and the seed of their SVD, both from the root seed."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=_SAMPLE_STREAM))
    rows = np.arange(n_samples) if n_samples <= GRAPH_SAMPLE else \
        np.sort(rng.choice(n_samples, GRAPH_SAMPLE, replace=False))
    return rows, int(rng.integers(np.iinfo(np.int32).max))


@on_one_blas_thread
def choose_n_clusters_joint(Xs: Sequence, metrics: Sequence[str], *, seed: int,
                            n_jobs: int = 1, space: JointSpace | None = None) -> KChoice:
    """Choose k from the views themselves: the eigengap of a neighbour graph of a uniform
    sample of their joint rows (see the module docstring).

    Parameters
    ----------
    Xs : list of array-like or sparse matrix, each of shape (n_samples, n_features_v)
    metrics : sequence of str
        Each view's metric (resolved).
    seed : int
        Root seed of the ensemble (the sample and the SVD come from its own stream).
    n_jobs : int, default=1
        Threads for the joint space's sums; the result does not depend on it.
    space : JointSpace, optional
        The views' joint space, if already fitted (:func:`fastmice._joint.fit_joint_space`).

    Returns
    -------
    choice : KChoice
    """
    rows, svd_seed = sampled_rows(Xs[0].shape[0], seed)
    if len(rows) < 4:
        return KChoice(2, np.array([2]), np.zeros(1), JOINT_RULE)
    space = fit_joint_space(Xs, metrics, n_jobs) if space is None else space
    return graph_eigengap_choice(space.transform(Xs, rows), svd_seed)
