"""``n_clusters="auto"``: the number of clusters chosen from the ensemble itself.

The rule, in two steps, both linear in the number of samples N:

1. **An ensemble that spans the candidates.** Without a k to draw the base clusterings' k
   around, base clustering ``g`` takes ``k_g = round(2 (K / 2) ** q_g)``: log-uniform over
   ``[2, K]``, ``K = clip(ceil(N / 4), 15, AUTO_BASE_CAP)`` (at most ``N - 1``), with
   ``q_g = frac(u + g * 0.618...)`` (the golden-ratio sequence from one draw ``u`` of the
   root seed): the members are evenly spread over the scales whatever their number, and
   group ``g`` still depends on ``(seed, g)`` alone. As many coarse members as fine ones,
   and the fine ones (costly) are few.
2. **The choice: the eigengap at each scale, among the members fine enough to see it.**
   A candidate k is read off the consensus graph of the base clusterings with more than k
   clusters only (coarser ones merge what k groups would keep apart and blur the gap; one
   of exactly k clusters would make a gap of its own): its normalised cluster-side graph
   ``S = Dy^-1/2 B^T Dx^-1 B Dy^-1/2`` (clusters x clusters, never samples x samples; the
   rows and columns of those members' clusters in the graph of all) has eigenvalues
   ``1 = l_1 >= l_2 >= ...`` with a gap after the k-th when the samples form k groups those
   base clusterings agree on. The score of k is ``(l_k - l_(k+1)) * ln(k) ** 1.5``; the
   chosen k has the largest. Candidates run from 2 to one less than the k of the base
   clustering that is the ``ceil(0.2 M)``-th finest of the ``M`` (a fifth of the members,
   two at least, see every candidate: with fewer, spurious gaps won at large k on the
   design part), at most N - 1: with 20 groups, 0.8 to 1.35 times N / 10 (median N / 10)
   up to N = 1,600, and 116 to 204 above.

Chosen on a design part of the shared datasets and generated sets, and checked on a
confirmation part fixed before (``benchmarks/k_auto.py``, docs/quality.md "Choosing k").
The paper mode chooses k this way; the best mode reads k off a neighbour graph of its joint
space instead (:mod:`fastmice._auto_k_graph`: it sees k of 40 and more, which this rule
does not), and its ensemble is spread as here.

With more than :data:`AUTO_SAMPLE` samples, ``S`` is estimated on a uniform sample of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg

__all__ = ["AUTO_BASE_CAP", "AUTO_SAMPLE", "CONSENSUS_RULE", "KChoice", "auto_base_clusters",
           "auto_base_k_top", "auto_reference_k", "choose_n_clusters"]

#: What :func:`choose_n_clusters` scores, in words (printed and reported with its choice).
CONSENSUS_RULE = ("the eigengap after the k-th eigenvalue of the consensus graph of the base "
                  "clusterings with more than k clusters, times ln(k)^1.5")
#: The largest k a base clustering of an auto ensemble draws (the cost grows with it).
AUTO_BASE_CAP = 400
#: Samples the cluster-side graphs are estimated on, at most.
AUTO_SAMPLE = 100_000
#: Weight of the gap: ``ln(k) ** GAP_POWER`` (the leading eigenvalues of a noisy graph fall
#: fastest at small k, whatever its groups).
GAP_POWER = 1.5
#: A candidate k is read off this share of the base clusterings at least (two at least):
#: those with more than k clusters.
MIN_MEMBER_SHARE = 0.2
#: Streams under the root seed (``fastmice._specs.group_rng``, which imports this module):
#: the sample's, a sub-stream of the consensus stream (1), and the spread's offset ``u``.
_SAMPLE_STREAM = (1, 1)
_SPREAD_STREAM = (2,)
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _stream(seed: int, stream: tuple[int, ...]) -> np.random.Generator:
    """``fastmice._specs.group_rng(seed, *stream)``."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=stream))


def auto_base_k_top(n_samples: int) -> int:
    """``K = clip(ceil(N / 4), 15, AUTO_BASE_CAP)``, at most ``N - 1`` (and at least 2): the
    largest k a base clustering of an auto ensemble draws."""
    top = min(AUTO_BASE_CAP, max(15, math.ceil(n_samples / 4)), n_samples - 1)
    return max(2, top)


def auto_reference_k(n_samples: int) -> int:
    """``ceil(K / 2)``: the k the parameters and the memory estimate take for ``"auto"``
    (base clusterings of ``base_clusters = (1, 2)`` times it reach ``K``)."""
    return max(2, math.ceil(auto_base_k_top(n_samples) / 2))


def auto_base_clusters(seed: int, group_index: int, n_samples: int,
                       n_anchors: int | None = None) -> int:
    """The number of clusters of base clustering ``group_index`` of an auto ensemble.

    Parameters
    ----------
    seed : int
        Root seed of the ensemble.
    group_index : int
    n_samples : int
    n_anchors : int, optional
        Anchors of the ensemble's groups (``n_anchors``): K is at most that.

    Returns
    -------
    k : int
        ``round(2 (K / 2) ** q)``, ``q = frac(u + group_index * 0.618...)``, in ``[2, K]``.
    """
    top = auto_base_k_top(n_samples)
    if n_anchors is not None:
        top = max(2, min(top, n_anchors))
    offset = float(_stream(seed, _SPREAD_STREAM).random())
    q = (offset + group_index * _GOLDEN) % 1.0
    return int(min(top, max(2, round(2.0 * (top / 2.0) ** q))))


@dataclass(frozen=True)
class KChoice:
    """The number of clusters chosen from an ensemble, and the other candidates.

    Attributes
    ----------
    n_clusters : int
        The chosen k (the largest score).
    candidates : ndarray of shape (n_candidates,)
        Every k considered, ascending: ``2 .. k_max``.
    scores : ndarray of shape (n_candidates,)
        The score of each candidate (consensus artifacts keep them as ``k_gaps``).
    rule : str or None
        What the scores are, in words (:data:`CONSENSUS_RULE` here; the best mode's
        :data:`fastmice._auto_k_graph.JOINT_RULE`); None for a choice stored without it.
    """

    n_clusters: int
    candidates: np.ndarray
    scores: np.ndarray
    rule: str | None = None

    @property
    def gaps(self) -> np.ndarray:
        """The scores, under the name the consensus artifact stores them (``k_gaps``)."""
        return self.scores

    def ranked(self, top: int | None = None) -> list[tuple[int, float]]:
        """``[(k, score), ...]``, largest score first (``top`` of them)."""
        order = np.argsort(-np.asarray(self.scores), kind="stable")[:top]
        return [(int(self.candidates[i]), round(float(self.scores[i]), 4)) for i in order]


def _cluster_graph(base_labels: np.ndarray, rng: np.random.Generator
                   ) -> tuple[sp.csr_matrix, np.ndarray]:
    """``B^T Dx^-1 B`` (sparse, used clusters x used clusters) of the base clusterings on at
    most AUTO_SAMPLE rows, and the member of each of its clusters."""
    n_samples = base_labels.shape[0]
    if n_samples > AUTO_SAMPLE:
        base_labels = base_labels[np.sort(rng.choice(n_samples, AUTO_SAMPLE, replace=False))]
    n_base = np.maximum(base_labels.max(axis=0) + 1, 1)
    offsets = np.concatenate([[0], np.cumsum(n_base)[:-1]])
    known = base_labels >= 0  # the best mode's -1: the base clustering knows nothing of it
    counts = known.sum(axis=1)
    kept = counts > 0
    base_labels, known, counts = base_labels[kept], known[kept], counts[kept]
    columns = (base_labels + offsets[None, :])[known]
    B = sp.csr_matrix((np.ones(columns.size), columns,
                       np.concatenate([[0], np.cumsum(counts)])),
                      shape=(base_labels.shape[0], int(n_base.sum())))
    used = np.flatnonzero(np.bincount(columns, minlength=B.shape[1]))
    member = np.repeat(np.arange(n_base.size), n_base)[used]
    B = B[:, used]
    return sp.csr_matrix(B.T @ sp.diags(1.0 / counts) @ B), member


def _leading_eigenvalues(W: sp.csr_matrix, count: int) -> np.ndarray:
    """The ``count`` largest eigenvalues of ``Dy^-1/2 W Dy^-1/2``, largest first (zeros
    past the size)."""
    scale = 1.0 / np.sqrt(np.asarray(W.sum(axis=1)).ravel())
    S = sp.csr_matrix(sp.diags(scale) @ W @ sp.diags(scale))
    size = S.shape[0]
    top = min(count, size)
    if size > 600 and top <= size // 8:  # few of many: Lanczos on the sparse graph
        values = scipy.sparse.linalg.eigsh(S, k=top, which="LA", v0=np.ones(size),
                                           return_eigenvectors=False)
        values = np.sort(values)[::-1]
    else:
        # every eigenvalue: the subset driver (evr) fails on the exact multiplicities of
        # few members' graphs
        values = scipy.linalg.eigvalsh(S.toarray(), driver="evd")[::-1][:top]
    return np.concatenate([values, np.zeros(count - top)])


def choose_n_clusters(base_labels: np.ndarray, *, seed: int) -> KChoice:
    """Choose k from base clusterings: the largest eigengap at each scale, weighted by
    ``ln(k) ** 1.5`` (see the module docstring).

    Parameters
    ----------
    base_labels : ndarray of shape (n_samples, n_members)
        Base clustering ``j`` in column ``j``, labels ``0..k_j-1`` (-1: unknown, best mode).
    seed : int
        Root seed of the ensemble (a large N is sampled from its own stream).

    Returns
    -------
    choice : KChoice
        Candidates ``2 .. k_max``, ``k_max`` one less than the k of the
        ``ceil(MIN_MEMBER_SHARE * n_members)``-th finest base clustering (the second at
        least), at most ``n_samples - 1``.
    """
    base_labels = np.asarray(base_labels, dtype=np.int64)
    n_samples, n_members = base_labels.shape
    W, member = _cluster_graph(base_labels, _stream(seed, _SAMPLE_STREAM))
    member_k = np.bincount(member, minlength=n_members)  # used clusters of each member
    enough = max(2, math.ceil(MIN_MEMBER_SHARE * n_members))
    seen = int(np.sort(member_k)[::-1][min(enough, n_members) - 1])
    k_max = max(2, min(seen - 1, n_samples - 1, W.shape[0] - 1))
    candidates = np.arange(2, k_max + 1)
    scores = np.zeros(candidates.size)
    lowest = 2
    for level in np.unique(member_k):
        # candidates [lowest, level): the members of more clusters than they (two at least)
        ks = candidates[(candidates >= lowest) & (candidates < level)]
        lowest = max(lowest, int(level))
        if ks.size == 0:
            continue
        keep = np.flatnonzero(member_k[member] >= level)
        values = _leading_eigenvalues(sp.csr_matrix(W[keep][:, keep]), int(ks[-1]) + 1)
        scores[ks - 2] = (values[ks - 1] - values[ks]) * np.log(ks) ** GAP_POWER
    return KChoice(int(candidates[np.argmax(scores)]), candidates, scores, CONSENSUS_RULE)
