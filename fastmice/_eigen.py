"""Leading eigenvectors of the normalised column graph of a bipartite graph (Tcut's eigen step).

For a bipartite graph ``B`` (rows x columns) with row degrees ``dx`` and column degrees ``d``,
Tcut needs the ``k`` leading eigenvectors of ``D^-1/2 B^T Dx^-1 B D^-1/2 = A^T A`` with
``A = Dx^-1/2 B D^-1/2`` (SPEC section 3, steps 2-7). Three ways, by the sizes:

* ``dense``: the columns are few (a view group has about 1000 anchors): the column graph is
  formed densely and ``eigh`` computes exactly the ``k`` leading eigenpairs, as the official
  code does;
* ``rows``: fewer rows than columns (a consensus of many clusters on few samples, e.g.
  k = 100 on 1,600 samples has 3,000 columns): the same eigenvectors come from the smaller
  dense ``A A^T`` (``v = A^T u / |A^T u|``);
* ``subspace``: many of both (the consensus at scale: sum of base cluster counts in the
  tens of thousands): block subspace iteration on the sparse column graph, then
  Rayleigh-Ritz. No dense matrix with a side of the number of columns or rows is formed.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from fastmice._parallel import map_threads

__all__ = ["column_graph_eigenvectors"]

_EPS = np.finfo(np.float64).eps
#: Largest side of a dense eigenproblem (a 4096^2 float64 matrix is 134 MB).
DENSE_MAX = 4096
#: Extra vectors of the subspace iteration, and its rounds.
_OVERSAMPLE = 0.2
_MIN_OVERSAMPLE = 16
_ROUNDS = 6
#: Rows of A per block of the subspace iteration's products.
_PRODUCT_ROWS = 16384


def _dense_top(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest eigenpairs of a symmetric matrix (destroyed), largest first."""
    n = matrix.shape[0]
    values, vectors = scipy.linalg.eigh(matrix, subset_by_index=[n - k, n - 1],
                                        overwrite_a=True, check_finite=False, driver="evr")
    return values[::-1], vectors[:, ::-1]


def column_graph_eigenvectors(B: sp.csr_matrix, k: int, *, rng: np.random.Generator | None = None,
                              method: str | None = None, n_jobs: int = 1) -> np.ndarray:
    """Generalised eigenvectors of ``(B^T Dx^-1 B, diag(d))`` for the ``k`` largest eigenvalues.

    Input is assumed validated: ``B`` is a non-negative CSR matrix with at least ``k``
    columns.

    Parameters
    ----------
    B : csr_matrix of shape (n_rows, n_columns)
    k : int
    rng : numpy.random.Generator, optional
        Start of the subspace iteration (only that method draws).
    method : {"dense", "rows", "subspace"}, optional
        Default: by the sizes (see the module docstring).
    n_jobs : int, default=1
        Threads for the subspace iteration's products (the result does not depend on it).

    Returns
    -------
    vectors : ndarray of shape (n_columns, k)
        ``D^-1/2 V`` with ``V`` the orthonormal leading eigenvectors, largest first.
    """
    n_rows, n_columns = B.shape
    if method is None:  # the smaller side, if it is small enough to be dense
        if n_columns <= min(n_rows, DENSE_MAX):
            method = "dense"
        elif n_rows <= DENSE_MAX:
            method = "rows"
        else:
            method = "dense" if n_columns <= DENSE_MAX else "subspace"
    dx = np.asarray(B.sum(axis=1)).ravel()
    dx[dx == 0] = 1e-10
    if method == "dense":
        Wy = B.T @ sp.csr_matrix(sp.diags(1.0 / dx) @ B)
        d = np.asarray(Wy.sum(axis=1)).ravel()
        d[d == 0] = _EPS
        d_inv_sqrt = 1.0 / np.sqrt(d)
        normalized = d_inv_sqrt[:, None] * Wy.toarray() * d_inv_sqrt[None, :]
        _, vectors = _dense_top((normalized + normalized.T) / 2, k)
        return d_inv_sqrt[:, None] * vectors
    # Wy 1 = B^T 1: the column degrees are the column sums of B.
    d = np.asarray(B.sum(axis=0)).ravel()
    d[d == 0] = _EPS
    d_inv_sqrt = 1.0 / np.sqrt(d)
    A = sp.csr_matrix(sp.diags(1.0 / np.sqrt(dx)) @ B @ sp.diags(d_inv_sqrt))
    if method == "rows":
        gram = (A @ A.T).toarray()
        _, row_vectors = _dense_top((gram + gram.T) / 2, k)
        vectors = np.asarray(A.T @ row_vectors)
        norms = np.linalg.norm(vectors, axis=0)
        vectors /= np.where(norms > 0, norms, 1.0)[None, :]
    elif method == "subspace":
        vectors = _subspace_top(A, k, rng or np.random.default_rng(0), n_jobs)
    else:
        raise ValueError(f"method={method!r}; expected 'dense', 'rows' or 'subspace'.")
    return d_inv_sqrt[:, None] * vectors


def _subspace_top(A: sp.csr_matrix, k: int, rng: np.random.Generator,
                  n_jobs: int) -> np.ndarray:
    """Leading ``k`` eigenvectors of ``A^T A`` by block subspace iteration and Rayleigh-Ritz.

    ``A^T A`` is applied as ``A^T (A x)`` (float32 products, float64 orthonormalisation):
    neither it nor anything with a side of ``A``'s rows and columns is formed densely.
    """
    n = A.shape[1]
    width = min(n, k + max(_MIN_OVERSAMPLE, int(_OVERSAMPLE * k)))
    A32 = A.astype(np.float32)
    blocks = [A32[start:start + _PRODUCT_ROWS] for start in range(0, A.shape[0], _PRODUCT_ROWS)]

    def gram_times(X: np.ndarray) -> np.ndarray:
        X32 = X.astype(np.float32)
        # Each block's A_b^T (A_b X), in threads (scipy releases the GIL), summed in block
        # order: the same result for any number of threads.
        parts = map_threads(lambda A_b: A_b.T @ np.asarray(A_b @ X32), blocks, n_jobs)
        return np.asarray(sum(parts[1:], parts[0]), dtype=np.float64)

    # LU between rounds keeps the basis well conditioned at a fifth of the cost of QR (as
    # scikit-learn's randomized_range_finder does); one QR at the end.
    basis = rng.standard_normal((n, width))
    for _ in range(_ROUNDS):
        basis, _ = scipy.linalg.lu(gram_times(basis), permute_l=True, check_finite=False)
    basis, _ = scipy.linalg.qr(gram_times(basis), mode="economic", check_finite=False)
    projected = basis.T @ gram_times(basis)
    _, ritz = _dense_top((projected + projected.T) / 2, k)
    return basis @ ritz
