"""External clustering quality scores: NMI, ARI, clustering accuracy and purity.

These are the four scores the FastMICE paper and the authors' demo report
(``computeFourClusteringMetrics``). NMI is normalised by ``max(H(true), H(pred))``
as in the paper, which is scikit-learn's ``average_method="max"`` and *not* its
default (``"arithmetic"``).

Labels may be any integers or strings; they are compared by identity only, so every
score is invariant to renaming the clusters. The numbers of true classes and predicted
clusters may differ.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

__all__ = ["clustering_accuracy", "clustering_scores", "purity_score"]


def _check_labeling(labels: ArrayLike, name: str) -> np.ndarray:
    """Return ``labels`` as a validated non-empty 1-D array (any sortable dtype)."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of cluster labels; got an array of shape {arr.shape}."
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one sample is needed.")
    if arr.dtype.kind not in "biufUSO":
        raise TypeError(f"{name} must hold integer or string labels; got dtype {arr.dtype}.")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite labels.")
    return arr


def _encode(labels: np.ndarray, name: str) -> tuple[np.ndarray, int]:
    """Map labels to codes ``0..n_unique-1``; return the codes and ``n_unique``."""
    try:
        uniques, codes = np.unique(labels, return_inverse=True)
    except TypeError as exc:  # e.g. an object array mixing ints and strings
        raise TypeError(
            f"{name} mixes label types that cannot be compared with each other ({exc})."
        ) from None
    return codes.reshape(-1), uniques.shape[0]


def _check_pair(y_true: ArrayLike, y_pred: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate two labelings of the same samples and return them as arrays."""
    true = _check_labeling(y_true, "y_true")
    pred = _check_labeling(y_pred, "y_pred")
    if true.shape[0] != pred.shape[0]:
        raise ValueError(
            f"y_true and y_pred must have the same length; got len(y_true)={true.shape[0]} "
            f"and len(y_pred)={pred.shape[0]}."
        )
    return true, pred


def _codes_and_table(
    y_true: ArrayLike, y_pred: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate, encode, and build the dense contingency table.

    Returns the codes of ``y_true`` and ``y_pred`` and the table of shape
    (n_classes, n_clusters): rows are true classes, columns predicted clusters.
    """
    true, pred = _check_pair(y_true, y_pred)
    t_codes, n_true = _encode(true, "y_true")
    p_codes, n_pred = _encode(pred, "y_pred")
    counts = np.bincount(t_codes * n_pred + p_codes, minlength=n_true * n_pred)
    return t_codes, p_codes, counts.reshape(n_true, n_pred)


def _accuracy(table: np.ndarray) -> float:
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / table.sum())


def _purity(table: np.ndarray) -> float:
    return float(table.max(axis=0).sum() / table.sum())


def clustering_accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Clustering accuracy under the best one-to-one matching of clusters to classes.

    The matching maximises the number of samples whose cluster is mapped to their true
    class (Hungarian algorithm on the contingency table). When the numbers of clusters
    and classes differ, the surplus clusters or classes stay unmatched and their
    samples count as errors.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Ground-truth class labels (integers or strings).
    y_pred : array-like of shape (n_samples,)
        Predicted cluster labels (integers or strings).

    Returns
    -------
    float
        Accuracy in ``[0, 1]``.

    Raises
    ------
    ValueError
        If a labeling is not 1-D, is empty, contains NaN, or the lengths differ.

    See Also
    --------
    clustering_scores : NMI, ARI, accuracy and purity at once.

    Examples
    --------
    >>> from fastmice.metrics import clustering_accuracy
    >>> round(clustering_accuracy([0, 0, 1, 1, 2, 2], [1, 1, 0, 0, 0, 2]), 4)
    0.8333
    """
    return _accuracy(_codes_and_table(y_true, y_pred)[2])


def purity_score(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Purity: each predicted cluster counts the samples of its most frequent true class.

    Purity is ``sum_j max_i n_ij / n_samples`` over predicted clusters ``j`` and true
    classes ``i``. Unlike :func:`clustering_accuracy` several clusters may be credited
    to the same class, so purity is never below accuracy and reaches 1 when every
    sample is its own cluster.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Ground-truth class labels (integers or strings).
    y_pred : array-like of shape (n_samples,)
        Predicted cluster labels (integers or strings).

    Returns
    -------
    float
        Purity in ``(0, 1]``.

    Raises
    ------
    ValueError
        If a labeling is not 1-D, is empty, contains NaN, or the lengths differ.

    Examples
    --------
    >>> from fastmice.metrics import purity_score
    >>> round(purity_score([0, 0, 0, 0, 1, 1], [0, 0, 1, 1, 2, 2]), 4)
    1.0
    """
    return _purity(_codes_and_table(y_true, y_pred)[2])


def clustering_scores(y_true: ArrayLike, y_pred: ArrayLike) -> dict[str, float]:
    """NMI, ARI, accuracy and purity of a clustering against ground truth.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Ground-truth class labels (integers or strings).
    y_pred : array-like of shape (n_samples,)
        Predicted cluster labels (integers or strings).

    Returns
    -------
    dict of str to float
        ``{"nmi", "ari", "acc", "purity"}``:

        * ``nmi`` -- mutual information normalised by ``max(H(y_true), H(y_pred))``,
          equal to ``sklearn.metrics.normalized_mutual_info_score(y_true, y_pred,
          average_method="max")`` (the normalisation the FastMICE paper reports);
        * ``ari`` -- adjusted Rand index (``sklearn.metrics.adjusted_rand_score``);
        * ``acc`` -- :func:`clustering_accuracy`;
        * ``purity`` -- :func:`purity_score`.

    Raises
    ------
    ValueError
        If a labeling is not 1-D, is empty, contains NaN, or the lengths differ.
    TypeError
        If a labeling mixes label types that cannot be sorted together.

    References
    ----------
    D. Huang, C.-D. Wang, J.-H. Lai, "Fast multi-view clustering via ensembles: towards
    scalability, superiority, and simplicity", IEEE TKDE 35(11), 2023,
    doi:10.1109/TKDE.2023.3236698.

    Examples
    --------
    >>> from fastmice.metrics import clustering_scores
    >>> scores = clustering_scores([0, 0, 1, 1], ["b", "b", "a", "a"])
    >>> {name: round(value, 3) for name, value in scores.items()}
    {'nmi': 1.0, 'ari': 1.0, 'acc': 1.0, 'purity': 1.0}
    """
    # sklearn sees integer codes, so string and object labels need no further checks.
    t_codes, p_codes, table = _codes_and_table(y_true, y_pred)
    return {
        "nmi": float(normalized_mutual_info_score(t_codes, p_codes, average_method="max")),
        "ari": float(adjusted_rand_score(t_codes, p_codes)),
        "acc": _accuracy(table),
        "purity": _purity(table),
    }
