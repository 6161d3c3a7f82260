"""The choices of ``mode="best"``, beyond the published algorithm (docs/algorithm.md).

Each choice is made from the data alone (never from labels, never per data set) and was
kept because it helped across the shared benchmarks (docs/quality.md, "The best mode"):

* **Empty rows carry no information.** A sample whose row of a view is all zero (a missing
  view, an empty document) is not a point of that view: it draws no anchor and, in a view
  group, is placed by the group's other views only. A sample that no member view of a group
  informs (every member row empty, or, under cosine, sharing no feature with any anchor) is
  left out of that base clustering (base label ``-1``) instead of being glued to whatever
  anchors tie.
* **Histograms by the Hellinger distance.** ``metric="auto"`` compares a compositional view
  (non-negative, every non-empty row the same sum: histograms, topic proportions) by the
  euclidean distance between the square roots of its values
  (:func:`fastmice._metric_rule.choose_metric`).
* **Base clusterings weighted by agreement.** In the consensus graph each base clustering
  counts in proportion to its agreement (NMI) with the others, so that base
  clusterings of uninformative view groups (one giant cluster and near-singletons) count
  little, and balanced but arbitrary ones too, while an imbalanced clustering that the
  others share keeps its weight. The agreement is the base clustering's centrality, its
  entry in the leading eigenvector of the agreement matrix (the mean agreement, repeated
  to its fixed point): where a view's own groups follow a structure the other views do
  not share, they form a smaller camp that agrees within itself, and agreeing with the
  camp that agrees most counts. Above ``BestChoices.proportional_max_samples`` samples a
  base clustering counts fully unless its agreement is below half the median (the
  ``agreement_knee``; docs/quality.md, "The best mode at scale"). Near-degenerate base
  clusterings (normalised entropy below :data:`BestChoices.entropy_knee`) count in
  proportion to their entropy as well (many view groups that isolate the same few samples
  agree with one another).
* **Finer base clusterings where k is small.** A base clustering draws its number of
  clusters up to ``min(sqrt(N), 50)`` where that is more than the paper's ``2 k`` (as the
  authors' locally weighted ensemble clustering, IEEE TCYB 2018, up to 100): with few
  clusters each base clustering is nearly a whole answer and the consensus a mere vote.
* **Wider consensus embeddings.** The consensus Tcut clusters the rows on more leading
  eigenvectors than its k (the first of which is constant): ``k + 1`` and ``ceil(1.5 k)``,
  then Tcut's own k, each in its own replicates (one eigenproblem, solved at the widest).
  With k of them, a split that every base clustering makes (a class in two stable halves)
  takes a direction that a pair of classes most base clusterings separate then lacks, and
  the k-means merges that pair; with more, a tiny cluster of a skewed set may take one.
  Which width suits the data is not known in advance: the replicates' agreement chooses.
* **Several consensus replicates.** The consensus is cut :data:`BestChoices.replicates`
  times per embedding width (each cut on its own random stream) and the cut that agrees
  best with the weighted base clusterings (average NMI, the clustering-ensemble objective)
  is kept.

:data:`CHOICES` holds the switches (``benchmarks/best_ablation.py`` turns each off in turn).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fastmice._parallel import fill_blocks, map_threads, team_size

__all__ = ["CHOICES", "UNINFORMED", "BestChoices", "agreement_knee", "agreement_weights",
           "base_k_range", "consensus_cuts", "consensus_widths", "empty_rows", "heavy_cuts",
           "informed_labels", "member_nmi", "missing_rows", "normalised_entropy",
           "weighted_agreement", "weighted_incidence"]

#: A base label meaning "this base clustering knows nothing of the sample".
UNINFORMED = -1
#: A graph row whose weights sum below this informs nothing (an informed member row has
#: unit L2 norm, an uninformed one at most ``n_neighbors`` weights of machine epsilon).
_INFORMED_ROW_SUM = 1e-6


@dataclass(frozen=True)
class BestChoices:
    """The switches of the best mode (all on by default).

    Attributes
    ----------
    empty_rows : bool
        All-zero rows of a view are missing in it; uninformed samples get base label -1.
    hellinger : bool
        ``metric="auto"`` compares compositional views by the Hellinger distance
        (:func:`fastmice._metric_rule.choose_metric`).
    all_view_groups : float
        Share of the view groups that take every view (the others draw their views as the
        paper does).
    all_view_groups_euclidean : float
        The same share where every view is compared by euclidean distance (dense views,
        whose every row informs), used instead of ``all_view_groups`` there.
    base_k_cap : int
        Base clusterings draw their k up to ``min(sqrt(N), base_k_cap)`` where that is
        more than the paper's ``2 k`` (:func:`base_k_range`); 0: the paper's range.
    weighting : {"none", "entropy", "agreement", "agreement_entropy"}
        How base clusterings are weighted in the consensus graph
        (:func:`agreement_weights`).
    centrality : bool
        Up to ``proportional_max_samples`` samples, a base clustering's agreement is its
        entry in the leading eigenvector of the members' agreement (NMI) matrix, its
        centrality (:func:`agreement_weights`), instead of its mean agreement.
    entropy_knee : float
        Normalised entropy from which a base clustering counts fully under
        ``"agreement_entropy"`` (below, in proportion).
    agreement_knee : float
        On data of more than ``proportional_max_samples`` samples: the share of the median
        agreement from which a base clustering counts fully under ``"agreement"`` and
        ``"agreement_entropy"`` (below, in proportion); 0: every base clustering in
        proportion to its agreement at any size.
    proportional_max_samples : int
        Up to this many samples every base clustering counts in proportion to its agreement
        (``agreement_knee`` applies above).
    extra_vectors : int
        The narrower consensus embedding has ``k + extra_vectors`` eigenvectors (0: Tcut's k).
    consensus_vectors : float
        The wider one has ``ceil(consensus_vectors * k)`` (at most 1: no wider one);
        :func:`consensus_widths`.
    wide_max_samples : int
        Up to this many samples the consensus embeddings are those two; above, Tcut's k
        eigenvectors (the consensus k-means costs in proportion to the width).
    replicates : int
        Consensus cuts per embedding width, the best by average NMI with the base
        clusterings kept.
    narrow_cuts : float or None
        ``replicates`` more cuts of Tcut's width k after the wider ones, kept where one agrees
        better than all of those by more than this (NMI; None: no such cuts).
    kmeans_plusplus_min_samples : int or None
        Above this many samples (and where the cuts are heavy) the consensus k-means starts
        once from k-means++ rows of its sample, not the best of ``n_init`` random ones.
    cuts_max_work : int
        Above this ``n_samples * k**2`` the consensus makes one cut of Tcut's width ``k``
        from one k-means++ start and the joint candidate one start of a few rounds, as on
        many samples: their k-means cost grows as ``N k^2``.
    replicates_max_samples : int
        Above this many samples one cut (each cut's k-means rounds run on every sample: three
        cost 1.7x the paper mode's whole fit at 100,000 samples).
    max_samples : int or None
        Data of more samples are clustered in the paper mode (its metric rule stays).
    joint_members_share : float
        Members of k-means on random shares of the joint space per view group, beside the
        base clusterings (:mod:`fastmice._joint_consensus`); 0 (the default): none (at 0.5
        the confirmation part lost 1.5 points: docs/quality.md).
    joint_candidate : bool
        k-means on every joint feature competes with the consensus cut, kept where it
        agrees better with the weighted members (or ties, ``joint_tie``).
    joint_null : bool
        The joint candidate is also kept where the consensus explains less of the joint
        space than k-means explains of it with its columns shuffled, and the candidate more
        (:func:`fastmice._joint_consensus.consensus_is_noise`): redundant weak views. Off
        since CODE_VERSION 19: ``joint_heldout`` keeps the candidate wherever it did.
    joint_tie : float
        The joint candidate is kept where its weighted agreement with the members is no
        more than this below the consensus's (NMI): within one point the ensemble's own
        objective cannot tell the two apart, and the candidate has seen every feature of
        every view. 0: only where it agrees better.
    joint_heldout : float
        Where the consensus still wins, the joint candidate is kept if it agrees with held-out
        members better, by more than this (NMI), than a consensus of the other members does
        (:func:`fastmice._joint_consensus.heldout_prefers_joint`): the consensus is built
        from the members it is scored on, and where every member is weak that alone can win
        it the in-sample comparison. None: no held-out check.
    joint_heldout_window : float
        The held-out check runs only where the consensus leads in-sample by at most this
        (it costs two consensuses; every case it changed on both parts led by <= 0.025).
    joint_kept_starts : int
        Once kept, the candidate gets this many k-means++ starts in all (on a sample of many
        samples, its rounds continue instead), unless the members agree with the result less
        (:func:`fastmice._joint_polish.polished_candidate`). 3 or fewer: neither.
    spectral_cluster_size : int
        Up to this many samples a cluster on average (0: never), spectral clustering on the
        joint neighbour graph competes too (:mod:`fastmice._joint_spectral`).
    spectral_heldout : bool
        It also wins where the held-out check prefers it (off: Movies fell 1.8 below paper).
    """

    empty_rows: bool = True
    hellinger: bool = True
    all_view_groups: float = 0.0
    all_view_groups_euclidean: float = 0.0
    base_k_cap: int = 50
    weighting: str = "agreement_entropy"
    centrality: bool = True
    entropy_knee: float = 0.5
    agreement_knee: float = 0.5
    proportional_max_samples: int = 20_000
    extra_vectors: int = 1
    consensus_vectors: float = 1.5
    wide_max_samples: int = 20_000
    replicates: int = 3
    narrow_cuts: float | None = 0.01
    kmeans_plusplus_min_samples: int | None = 20_000
    replicates_max_samples: int = 100_000
    cuts_max_work: int = 500_000_000
    max_samples: int | None = None
    joint_members_share: float = 0.0
    joint_candidate: bool = True
    joint_null: bool = False
    joint_tie: float = 0.01
    joint_heldout: float | None = 0.01
    joint_heldout_window: float = 0.05
    joint_kept_starts: int = 10
    spectral_cluster_size: int = 50
    spectral_heldout: bool = False


#: The choices in force (a benchmark may replace it to measure each one's effect).
CHOICES = BestChoices()


def agreement_knee(n_samples: int) -> float:
    """The ``agreement_knee`` of :func:`agreement_weights` for data of ``n_samples`` rows:
    0 (proportional) up to ``CHOICES.proportional_max_samples``, ``CHOICES.agreement_knee``
    above."""
    return 0.0 if n_samples <= CHOICES.proportional_max_samples else CHOICES.agreement_knee


def base_k_range(low_k: int, high_k: int, n_samples: int, mode: str) -> tuple[int, int]:
    """The range a base clustering draws its k from: the paper's ``[low_k, high_k]``; in
    the best mode its top raised to ``min(floor(sqrt(N)), base_k_cap)`` if that is larger
    (and at most ``n_samples``)."""
    if mode != "best" or CHOICES.base_k_cap <= 0:
        return low_k, high_k
    finer = min(math.isqrt(n_samples), CHOICES.base_k_cap, n_samples)
    return low_k, max(high_k, finer)


def heavy_cuts(n_clusters: int, n_samples: int) -> bool:
    """Whether ``n_samples * k**2`` is above ``cuts_max_work``: one consensus cut and one
    short joint k-means, whatever the number of samples."""
    return n_samples * n_clusters ** 2 > CHOICES.cuts_max_work


def consensus_widths(n_clusters: int, n_samples: int) -> list[int]:
    """Eigenvectors of the best mode's consensus embeddings, each at least ``k`` and at
    most ``n_samples``, without repeats: ``k + extra_vectors``, then
    ``ceil(consensus_vectors * k)`` (k = 2: [3]; k = 10: [11, 15]; k = 100: [101, 150]);
    Tcut's ``[k]`` on more than ``wide_max_samples`` samples or where the cuts are
    heavy (:func:`heavy_cuts`)."""
    if n_samples > CHOICES.wide_max_samples or heavy_cuts(n_clusters, n_samples):
        return [n_clusters]
    wanted = [n_clusters + CHOICES.extra_vectors,
              math.ceil(max(1.0, CHOICES.consensus_vectors) * n_clusters - 1e-9)]
    return list(dict.fromkeys(max(n_clusters, min(width, n_samples)) for width in wanted))


def consensus_cuts(n_clusters: int, n_samples: int) -> tuple[list[int], str]:
    """The best mode's consensus cuts on data of ``n_samples`` rows: the embedding width of
    each cut, in order (:func:`consensus_widths`, taking turns, ``replicates`` times each,
    then as many of width k; one cut above ``replicates_max_samples``), and how their k-means
    start (``"k-means++"`` above ``kmeans_plusplus_min_samples`` or where the cuts are
    heavy, else ``"random"``)."""
    widths, heavy = consensus_widths(n_clusters, n_samples), heavy_cuts(n_clusters, n_samples)
    replicates = 1 if n_samples > CHOICES.replicates_max_samples or heavy else \
        max(1, CHOICES.replicates)
    plusplus = CHOICES.kmeans_plusplus_min_samples
    start = "k-means++" if heavy or (plusplus is not None and n_samples > plusplus) else "random"
    narrow = CHOICES.narrow_cuts is not None and n_clusters not in widths
    return widths * replicates + [n_clusters] * (replicates * narrow), start


def empty_rows(X) -> np.ndarray:
    """Boolean mask of the all-zero rows of a view, shape (n_samples,).

    Dense views and row readers are read a block of rows at a time (in the threads of the
    calling thread's team, :func:`fastmice._parallel.team_size`).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        return np.diff(X.indptr) == 0 if not (X.data == 0).any() else \
            np.asarray(abs(X).sum(axis=1)).ravel() == 0
    return fill_blocks(np.empty(X.shape[0], dtype=bool),
                       lambda rows: ~np.asarray(X[rows]).any(axis=1), team_size(), 8192)


def missing_rows(Xs, mode: str) -> list[np.ndarray] | None:
    """What :func:`fastmice.build_group_graph` takes as ``empty_rows``: each view's all-zero
    rows in the best mode (missing there), None in the paper mode."""
    return [empty_rows(X) for X in Xs] if mode == "best" and CHOICES.empty_rows else None


def informed_labels(B: sp.spmatrix, labels: np.ndarray) -> np.ndarray:
    """``labels`` with :data:`UNINFORMED` for the rows of ``B`` that carry no weight."""
    row_sums = np.asarray(sp.csr_matrix(B).sum(axis=1)).ravel()
    out = np.asarray(labels, dtype=np.int64).copy()
    out[row_sums < _INFORMED_ROW_SUM] = UNINFORMED
    return out


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def member_nmi(a: np.ndarray, b: np.ndarray) -> float:
    """NMI (square-root normalised) of two labelings over the samples both inform."""
    both = (a >= 0) & (b >= 0)
    if both.sum() < 2:
        return 0.0
    a, b = a[both], b[both]
    joint = np.bincount(a * (int(b.max()) + 1) + b)
    ha, hb = _entropy(np.bincount(a)), _entropy(np.bincount(b))
    if ha <= 0 or hb <= 0:
        return 0.0
    return max(0.0, (ha + hb - _entropy(joint)) / np.sqrt(ha * hb))


def weighted_agreement(labels: np.ndarray, base_labels: np.ndarray,
                       weights: np.ndarray, n_jobs: int = 1) -> float:
    """Average NMI (:func:`member_nmi`) of ``labels`` with the base clusterings (columns of
    ``base_labels``), weighted: the ensemble's objective, the partition that shares most
    information with its members. One NMI a member, in ``n_jobs`` threads."""
    columns = np.ascontiguousarray(base_labels.T)
    scores = map_threads(lambda column: member_nmi(labels, column), list(columns), n_jobs)
    return float(np.dot(weights, scores) / weights.sum())


def normalised_entropy(labels: np.ndarray) -> float:
    """Entropy of a base clustering over the samples it informs, divided by ``log`` of its
    number of non-empty clusters (1: balanced; near 0: one giant cluster and
    near-singletons)."""
    counts = np.bincount(labels[labels >= 0])
    return _entropy(counts) / np.log(max(2, np.count_nonzero(counts)))


def _pair_agreement(base_labels: np.ndarray, n_jobs: int = 1) -> np.ndarray:
    """NMI of every pair of members (zero diagonal), the pairs in ``n_jobs`` threads (at
    400,000 samples and 20 members, 5 s on one)."""
    n_members = base_labels.shape[1]
    columns = np.ascontiguousarray(base_labels.T)  # each member's labels in one stretch
    upper = [(i, j) for i in range(n_members) for j in range(i + 1, n_members)]
    scores = map_threads(lambda pair: member_nmi(columns[pair[0]], columns[pair[1]]), upper,
                         n_jobs)
    pairs = np.zeros((n_members, n_members))
    for (i, j), score in zip(upper, scores, strict=True):
        pairs[i, j] = pairs[j, i] = score
    return pairs


def _centrality(pairs: np.ndarray, voters: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Leading eigenvector (Perron vector, non-negative) of the agreement matrix with each
    member's agreements counted in proportion to ``voters`` (``diag(v) P diag(v)``), scaled
    to the ``mean`` agreement; ``mean`` itself if there is no agreement at all."""
    counted = pairs * voters[:, None] * voters[None, :]
    if not counted.any():
        return mean
    vector = np.abs(np.linalg.eigh(counted)[1][:, -1])
    return vector * (mean.sum() / vector.sum())


def agreement_weights(base_labels: np.ndarray, weighting: str,
                      entropy_knee: float = 0.5, agreement_knee: float = 0.0,
                      centrality: bool = False, n_jobs: int = 1) -> np.ndarray:
    """One weight per base clustering (column of ``base_labels``), mean 1.

    ``"agreement"``: its mean NMI with the other base clusterings (with ``centrality`` and
    no ``agreement_knee``: its entry in the leading eigenvector of the agreement matrix, so
    that agreeing with base clusterings that the others agree with counts more: where the
    views split the members into camps, the larger and more coherent camp weighs more);
    ``"agreement_entropy"``:
    that times ``min(1, H / entropy_knee)``, ``H`` its :func:`normalised_entropy`, so that a
    near-degenerate clustering counts little even where the other near-degenerate ones
    isolate the same few samples and so agree with it (with ``centrality``, agreeing with
    a near-degenerate one counts in the same proportion: the eigenvector of
    ``diag(f) P diag(f)``, ``f`` that factor, else they would make a camp of their own);
    ``"entropy"``: ``H`` alone;
    ``"none"``: ones. With ``agreement_knee`` > 0 the agreement factor is
    ``min(1, A / (agreement_knee * median(A)))``: only base clusterings that agree with the
    others far less than is typical count less. The pairs' NMIs run in ``n_jobs`` threads.
    """
    n_members = base_labels.shape[1]
    if weighting == "none" or n_members == 1:
        return np.ones(n_members)
    if weighting not in ("agreement", "agreement_entropy", "entropy"):
        raise ValueError(f"Unknown weighting {weighting!r}.")
    entropies = np.array([normalised_entropy(base_labels[:, j]) for j in range(n_members)])
    if weighting == "entropy":
        raw = entropies
    else:
        factor = np.minimum(1.0, entropies / entropy_knee) \
            if weighting == "agreement_entropy" else np.ones(n_members)
        pairs = _pair_agreement(base_labels, n_jobs)
        raw = pairs.sum(axis=1) / (n_members - 1)
        if centrality and agreement_knee <= 0:
            raw = _centrality(pairs, factor, raw)
        if agreement_knee > 0:
            typical = agreement_knee * float(np.median(raw))
            raw = np.minimum(1.0, raw / typical) if typical > 0 else np.ones(n_members)
        raw = raw * factor
    if raw.sum() <= 0:
        return np.ones(n_members)
    return raw * (n_members / raw.sum())


def weighted_incidence(base_labels: np.ndarray, offsets: np.ndarray, n_columns: int,
                       weights: np.ndarray) -> sp.csr_matrix:
    """Sample-to-cluster matrix: weight ``weights[j]`` at each sample's cluster of member
    ``j``, nothing where the sample's base label is :data:`UNINFORMED`."""
    n_samples = base_labels.shape[0]
    informed = base_labels >= 0
    columns = (base_labels + offsets[None, :])[informed]
    values = np.broadcast_to(weights[None, :], base_labels.shape)[informed]
    indptr = np.concatenate([[0], np.cumsum(informed.sum(axis=1))])
    return sp.csr_matrix((values.astype(np.float64), columns, indptr),
                         shape=(n_samples, n_columns))
