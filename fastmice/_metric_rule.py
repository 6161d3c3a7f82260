"""``metric="auto"``: the distance of each view, chosen from the view's values alone.

The rule: a view is compared by **cosine** when it is *sparse and non-negative*, the shape
of bag-of-words, tf-idf, link and citation views, whose rows differ mostly by their length
(a long document is far from a short one on the same topic under the euclidean distance,
close under cosine). "Sparse" means fewer than :data:`SPARSE_DENSITY` of the entries of its
non-empty rows are non-zero, so that a view with many all-zero (missing) rows is judged by
the rows it has.

In the best mode a dense non-negative view whose non-empty rows all have the same sum (to
a relative :data:`COMPOSITIONAL_RTOL`) is **compositional**: histograms of visual words,
colour or texture, topic proportions. Its rows are distributions, and it is compared by
the **Hellinger** distance (``"hellinger"``: euclidean between the element-wise square
roots), which does not let the few large bins of a histogram decide every distance as the
euclidean distance does. The paper mode keeps the paper's metrics (its ``"auto"`` never
picks it). Every other view is compared by **euclidean** distance.

On the 16 shared data sets the rule picks cosine for exactly the text and graph views
(3Sources, Citeseer, Movies, NGs, Reuters-1200, WebKB: densities 0.001-0.045) and euclidean
for every image and feature view (densities 0.14 and up among non-empty rows: BDGP,
Hdigit and MNIST-USPS are the sparsest of those), of which the best mode compares by
Hellinger the compositional ones (both views of Wikipedia, all three of Scene-15, two of
100Leaves and of ALOI-1079: NMI +0.5 to +8.6 points there). docs/quality.md has the
evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["AUTO", "COMPOSITIONAL_RTOL", "SPARSE_DENSITY", "choose_metric",
           "is_compositional", "resolve_metrics"]

#: The metric value that asks for the rule.
AUTO = "auto"
#: Below this fraction of non-zeros among a view's non-empty rows, a non-negative view is
#: compared by cosine (text and graph views: at most 0.05 on the shared sets; image and
#: feature views: 0.14 and more).
SPARSE_DENSITY = 0.10
#: Largest relative spread (std / mean) of the row sums of a compositional view: float32
#: rounding of rows that sum to 1 (3e-6 on 100Leaves); count views of the shared sets
#: spread by 0.02 (100Leaves' second view) and far more.
COMPOSITIONAL_RTOL = 1e-4
#: Rows read to judge a dense view (evenly spaced): enough for a density to 1 %.
_ROWS_READ = 4096


def _sampled_rows(X) -> np.ndarray | sp.csr_matrix:
    n = X.shape[0]
    if sp.issparse(X) or n <= _ROWS_READ:
        return X if sp.issparse(X) else np.asarray(X[:n])
    rows = np.linspace(0, n - 1, _ROWS_READ).astype(np.intp)
    if isinstance(X, np.ndarray):
        return X[rows]
    return np.vstack([np.asarray(X[i:i + 1]) for i in rows])  # a row reader on disk


def _lowest(rows) -> float:
    """The smallest value of some rows (dense or sparse; 0 if there are none)."""
    return float(rows.data.min(initial=0) if sp.issparse(rows) else rows.min(initial=0))


def _non_negative_rows(X):
    """The rows read of a view (:func:`_sampled_rows`; CSR if sparse), or None if any of
    their values is negative."""
    rows = _sampled_rows(X)
    if sp.issparse(rows):
        rows = sp.csr_matrix(rows)
    return None if _lowest(rows) < 0 else rows


def _nonzeros_per_row(rows) -> np.ndarray:
    if sp.issparse(rows):  # explicit zeros left out, and left in the caller's matrix
        row_of = np.repeat(np.arange(rows.shape[0]), np.diff(rows.indptr))
        return np.bincount(row_of[rows.data != 0], minlength=rows.shape[0])
    return np.count_nonzero(rows, axis=1)


def _row_sums_constant(rows) -> bool:
    sums = np.asarray(rows.sum(axis=1), dtype=np.float64).ravel()
    sums = sums[sums > 0]
    return sums.size > 1 and float(np.std(sums)) <= COMPOSITIONAL_RTOL * float(np.mean(sums))


def is_compositional(X) -> bool:
    """Whether a view is non-negative with the same sum on every non-empty row (read on at
    most a few thousand evenly spaced rows).

    Parameters
    ----------
    X : ndarray, sparse matrix or row reader of shape (n_samples, n_features)

    Returns
    -------
    compositional : bool
    """
    rows = _non_negative_rows(X)
    return rows is not None and _row_sums_constant(rows)


def choose_metric(X, mode: str = "paper") -> str:
    """``"cosine"`` for a sparse non-negative view; in the best mode ``"hellinger"`` for a
    compositional one (:func:`is_compositional`); else ``"euclidean"``.

    Parameters
    ----------
    X : ndarray, sparse matrix or row reader of shape (n_samples, n_features)
    mode : {"paper", "best"}, default="paper"

    Returns
    -------
    metric : str
    """
    rows = _non_negative_rows(X)
    if rows is None:
        return "euclidean"
    nonzeros_per_row = _nonzeros_per_row(rows)
    filled = nonzeros_per_row[nonzeros_per_row > 0]
    if filled.size == 0:
        return "euclidean"
    density = filled.sum() / (filled.size * X.shape[1])
    if density < SPARSE_DENSITY:
        return "cosine"
    from fastmice._best import CHOICES

    if mode == "best" and CHOICES.hellinger and _row_sums_constant(rows):
        return "hellinger"
    return "euclidean"


def _check_hellinger(X, view: int) -> None:
    low = _lowest(_sampled_rows(X))
    if low < 0:
        raise ValueError(f"View {view} has negative values ({low:.3g}); metric 'hellinger' "
                         "compares the square roots of non-negative rows.")


def resolve_metrics(Xs: Sequence, metric: str | Sequence[str],
                    mode: str = "paper") -> tuple[str, ...]:
    """One concrete metric per view: ``"auto"`` (alone or per view) replaced by the rule.

    Parameters
    ----------
    Xs : list of views, each of shape (n_samples, n_features_v)
    metric : str or sequence of str
        As :class:`fastmice.EnsembleParams` holds it.
    mode : {"paper", "best"}, default="paper"
        The mode the views are clustered in (only the best mode picks ``"hellinger"``).

    Returns
    -------
    metrics : tuple of str
        ``"euclidean"``, ``"cosine"`` or ``"hellinger"``, one per view.

    Raises
    ------
    ValueError
        A view given ``"hellinger"`` has negative values (among the rows read).
    """
    metrics = [metric] * len(Xs) if isinstance(metric, str) else list(metric)
    resolved = tuple(choose_metric(X, mode) if m == AUTO else m
                     for X, m in zip(Xs, metrics, strict=True))
    for v, (X, m) in enumerate(zip(Xs, metrics, strict=True)):
        if m == "hellinger":
            _check_hellinger(X, v)
    return resolved
