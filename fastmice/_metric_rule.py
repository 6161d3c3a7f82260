"""``metric="auto"``: the distance of each view, chosen from the view's values alone.

The rule: a view is compared by **cosine** when it is *sparse and non-negative*, the shape
of bag-of-words, tf-idf, link and citation views, whose rows differ mostly by their length
(a long document is far from a short one on the same topic under the euclidean distance,
close under cosine). Every other view is compared by **euclidean** distance. "Sparse"
means fewer than :data:`SPARSE_DENSITY` of the entries of its non-empty rows are non-zero,
so that a view with many all-zero (missing) rows is judged by the rows it has.

On the 16 shared data sets the rule picks cosine for exactly the text and graph views
(3Sources, Citeseer, Movies, NGs, Reuters-1200, WebKB: densities 0.001-0.045) and euclidean
for every image and feature view (densities 0.14 and up among non-empty rows: BDGP,
Hdigit and MNIST-USPS are the sparsest of those). docs/quality.md has the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["AUTO", "SPARSE_DENSITY", "choose_metric", "resolve_metrics"]

#: The metric value that asks for the rule.
AUTO = "auto"
#: Below this fraction of non-zeros among a view's non-empty rows, a non-negative view is
#: compared by cosine (text and graph views: at most 0.05 on the shared sets; image and
#: feature views: 0.14 and more).
SPARSE_DENSITY = 0.10
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


def choose_metric(X) -> str:
    """``"cosine"`` for a sparse non-negative view, else ``"euclidean"``.

    Parameters
    ----------
    X : ndarray, sparse matrix or row reader of shape (n_samples, n_features)

    Returns
    -------
    metric : str
    """
    rows = _sampled_rows(X)
    if sp.issparse(rows):
        rows = sp.csr_matrix(rows)
        rows.eliminate_zeros()
        if rows.nnz and rows.data.min() < 0:
            return "euclidean"
        nonzeros_per_row = np.diff(rows.indptr)
    else:
        if rows.size and rows.min() < 0:
            return "euclidean"
        nonzeros_per_row = np.count_nonzero(rows, axis=1)
    filled = nonzeros_per_row[nonzeros_per_row > 0]
    if filled.size == 0:
        return "euclidean"
    density = filled.sum() / (filled.size * X.shape[1])
    return "cosine" if density < SPARSE_DENSITY else "euclidean"


def resolve_metrics(Xs: Sequence, metric: str | Sequence[str]) -> tuple[str, ...]:
    """One concrete metric per view: ``"auto"`` (alone or per view) replaced by the rule.

    Parameters
    ----------
    Xs : list of views, each of shape (n_samples, n_features_v)
    metric : str or sequence of str
        As :class:`fastmice.EnsembleParams` holds it.

    Returns
    -------
    metrics : tuple of str
        ``"euclidean"`` or ``"cosine"``, one per view.
    """
    metrics = [metric] * len(Xs) if isinstance(metric, str) else list(metric)
    return tuple(choose_metric(X) if m == AUTO else m for X, m in zip(Xs, metrics, strict=True))
