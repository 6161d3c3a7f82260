"""``n_clusters="auto"``: the number of clusters chosen from the ensemble itself.

The rule, in two steps, both linear in the number of samples N:

1. **The ensemble.** Without a k to draw the base clusterings' k around, they draw it around
   the *reference k* ``k0 = clip(round(sqrt(N) / 2), 2, 50)`` (in ``[base_clusters[0] * k0,
   base_clusters[1] * k0]``, ``[k0, 2 k0]`` by default): finer partitions than most data's
   classes, which the consensus merges.
2. **The choice.** The consensus graph (samples x base clusters) gives the normalised
   cluster-side graph ``S = Dy^-1/2 B^T Dx^-1 B Dy^-1/2`` (the matrix transfer cut takes its
   eigenvectors from; clusters x clusters, never samples x samples). Its eigenvalues
   ``1 = l_1 >= l_2 >= ...`` have a gap after the k-th when the samples form k groups the
   base clusterings agree on. Every k in ``[2, 2 k0]`` is a candidate with its gap
   ``l_k - l_(k+1)``, scored ``gap * ln(k)``; the chosen k has the largest score. (The
   leading eigenvalues of a noisy graph fall fastest at small k, whatever its groups: the
   plain largest gap chose 2 or 3 on most of the noisy benchmarks, the weighted one is
   nearer the classes; ``benchmarks/k_auto.py``, docs/pipeline.md.)

With more than :data:`AUTO_SAMPLE` samples, ``S`` is estimated on a uniform sample of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from fastmice._specs import CONSENSUS_STREAM, group_rng

__all__ = ["AUTO_K_BOUNDS", "AUTO_SAMPLE", "KChoice", "auto_reference_k", "choose_n_clusters"]

#: Bounds of the reference k (the base clusterings' k is drawn in [k0, 2 k0]).
AUTO_K_BOUNDS = (2, 50)
#: Samples the cluster-side graph is estimated on, at most.
AUTO_SAMPLE = 100_000
#: The sub-stream of the consensus stream the sample is drawn from.
_AUTO_STREAM = 1


def auto_reference_k(n_samples: int) -> int:
    """``clip(round(sqrt(n_samples) / 2), 2, 50)``: the k the base clusterings' k is drawn
    around when ``n_clusters="auto"``."""
    low, high = AUTO_K_BOUNDS
    return int(min(high, max(low, round(math.sqrt(n_samples) / 2))))


@dataclass(frozen=True)
class KChoice:
    """The number of clusters chosen from an ensemble, and the other candidates.

    Attributes
    ----------
    n_clusters : int
        The chosen k (the largest score).
    candidates : ndarray of shape (n_candidates,)
        Every k considered, ascending: ``2 .. k_max``.
    gaps : ndarray of shape (n_candidates,)
        The eigengap ``l_k - l_(k+1)`` of each candidate; its score is ``gap * ln(k)``.
    """

    n_clusters: int
    candidates: np.ndarray
    gaps: np.ndarray

    @property
    def scores(self) -> np.ndarray:
        """``gaps * ln(candidates)``: what the choice maximises."""
        return self.gaps * np.log(self.candidates)

    def ranked(self, top: int | None = None) -> list[tuple[int, float]]:
        """``[(k, gap), ...]``, largest score first (``top`` of them)."""
        order = np.argsort(-self.scores, kind="stable")[:top]
        return [(int(self.candidates[i]), round(float(self.gaps[i]), 4)) for i in order]


def _cluster_graph(base_labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Dense ``S`` (clusters x clusters) of the base clusterings, on at most AUTO_SAMPLE rows."""
    n_samples = base_labels.shape[0]
    if n_samples > AUTO_SAMPLE:
        base_labels = base_labels[np.sort(rng.choice(n_samples, AUTO_SAMPLE, replace=False))]
        n_samples = AUTO_SAMPLE
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
    B = B[:, used]
    W = (B.T @ sp.diags(1.0 / counts) @ B).toarray()  # B^T Dx^-1 B
    dy = W.sum(axis=1)
    scale = 1.0 / np.sqrt(dy)
    return W * scale[:, None] * scale[None, :]


def choose_n_clusters(base_labels: np.ndarray, n_samples_reference: int | None = None, *,
                      seed: int) -> KChoice:
    """Choose k from base clusterings by the eigengap of their consensus graph (weighted by
    ln k; see the module docstring).

    Parameters
    ----------
    base_labels : ndarray of shape (n_samples, n_members)
        Base clustering ``j`` in column ``j``, labels ``0..k_j-1``.
    n_samples_reference : int, optional
        The N the reference k is computed from (default: ``n_samples``); the candidates are
        ``2 .. 2 k0``, at most the number of base clusters less one.
    seed : int
        Root seed of the ensemble (a large N is sampled from its own stream).

    Returns
    -------
    choice : KChoice
    """
    base_labels = np.asarray(base_labels, dtype=np.int64)
    n_samples = base_labels.shape[0]
    k0 = auto_reference_k(n_samples if n_samples_reference is None else n_samples_reference)
    S = _cluster_graph(base_labels, group_rng(seed, CONSENSUS_STREAM, _AUTO_STREAM))
    k_max = max(2, min(2 * k0, S.shape[0] - 1, n_samples - 1))
    size = S.shape[0]
    top = min(size, k_max + 1)
    values = scipy.linalg.eigh(S, eigvals_only=True, subset_by_index=[size - top, size - 1],
                               driver="evr")[::-1]
    values = np.concatenate([values, np.zeros(k_max + 1 - values.size)])
    candidates = np.arange(2, k_max + 1)
    gaps = values[candidates - 1] - values[candidates]
    return KChoice(int(candidates[np.argmax(gaps * np.log(candidates))]), candidates, gaps)
