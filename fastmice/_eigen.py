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

By default the small side's problem of ``dense`` and ``rows`` goes to Lanczos (ARPACK's
``eigsh``, to machine precision) on the sparse matrix instead of ``eigh`` on the dense one
when few eigenpairs are wanted from a side of some hundreds (a view group's 1000 anchors
and 10-30 base clusters: 3-10x faster). Lanczos from one start vector can miss a copy of a
repeated eigenvalue; the one a graph has for sure, 1 once per connected component, is ruled
out by asking it only of connected graphs, and ``eigh`` takes over when it does not converge.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

from fastmice._lapack import top_eigenpairs
from fastmice._parallel import map_blocks, map_threads

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
#: Pieces (blocks of rows times parts of the columns) of each of its products, at least.
_MIN_PIECES = 32
#: Column parts of the Rayleigh-Ritz projection and rows a piece of its back-transform.
_RITZ_PARTS, _RITZ_ROWS = 16, 512


#: Lanczos instead of the dense solver from this side on, for at most side / this many
#: eigenpairs. ARPACK's loop runs in Python and holds the GIL between its products, while
#: the dense solver runs without it (``fastmice._lapack``), so in threads the dense solver
#: is worth more than its own time says: at 32 (16 before), Movies' groups (side 617, 17-34
#: eigenpairs) take 0.85x the time in two threads, and the groups of 1000 anchors into
#: 6-20 clusters (Reuters, mfeat) keep Lanczos.
_LANCZOS_MIN_SIDE = 400
_LANCZOS_SIDE_PER_VECTOR = 32
#: Restarts before Lanczos gives way to the dense solver (those that converge take < 20).
_LANCZOS_RESTARTS = 50
#: Lanczos's relative tolerance on the eigenvalues where single precision is enough (the
#: base clusterings, whose dense eigenproblems are solved in float32): subspaces within
#: 1e-10 of the exact ones on the groups' graphs, and 0.65-0.8x the time of tol = 0.
_SINGLE_TOL = 1e-6
#: Edges below this fraction of the largest do not connect components.
_NEGLIGIBLE = 1e-9


def _scaled(M: sp.csr_matrix, row_scale: np.ndarray,
            column_scale: np.ndarray | None = None) -> sp.csr_matrix:
    """``diag(row_scale) @ M @ diag(column_scale)`` of a CSR matrix with sorted indices,
    entry by entry (no column scaling if ``column_scale`` is None).

    The same entries in the same order as scipy's products with diagonal matrices
    (checked in ``tests/unit/test_scale_paths.py``), without their sparse-product passes.
    """
    if not M.has_sorted_indices:
        scaled = sp.diags(row_scale) @ M
        return sp.csr_matrix(scaled if column_scale is None else scaled @ sp.diags(column_scale))
    rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    data = row_scale[rows] * M.data
    if column_scale is not None:
        data *= column_scale[M.indices]
    scaled = sp.csr_matrix((data, M.indices.copy(), M.indptr.copy()), shape=M.shape)
    scaled.eliminate_zeros()  # as the products do
    return scaled


def _lanczos_tol(dense_dtype: type) -> float:
    return 0.0 if np.dtype(dense_dtype) == np.float64 else _SINGLE_TOL


def _dense_top(matrix: np.ndarray, k: int,
               dtype: type = np.float64) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest eigenpairs of a symmetric matrix (destroyed), largest first,
    computed in ``dtype``."""
    values, vectors = top_eigenpairs(matrix.astype(dtype, copy=False), k)
    return values[::-1], vectors[:, ::-1].astype(np.float64, copy=False)


def _lanczos_worth(n: int, k: int, force: bool = False) -> bool:
    """Whether Lanczos is to be tried for ``k`` eigenpairs of a side of ``n`` (by the sizes)."""
    if k >= n - 1:  # ARPACK needs k < n - 1
        return False
    return force or (n >= _LANCZOS_MIN_SIDE and k * _LANCZOS_SIDE_PER_VECTOR <= n)


def _lanczos_top(matrix: sp.csr_matrix, k: int, tol: float = 0.0) -> np.ndarray | None:
    """The ``k`` leading eigenvectors of a sparse symmetric graph matrix by Lanczos, largest
    first; None where it is not a safe choice or does not converge (see the module).

    The start vector is fixed (the result is a function of the matrix alone).
    """
    n = matrix.shape[0]
    # Components joined only by negligible edges (the graph's eps weights) have eigenvalues
    # 1 - O(eps): as good as repeated, so they count as separate.
    strong = matrix.copy()
    strong.data[strong.data <= _NEGLIGIBLE * strong.data.max(initial=0)] = 0
    strong.eliminate_zeros()
    _, component = connected_components(strong, directed=False)
    if np.unique(component[strong.getnnz(axis=1) > 0]).size > 1:
        return None
    start = np.random.default_rng(n).standard_normal(n)
    try:
        values, vectors = eigsh(matrix, k=k, which="LA", v0=start, tol=tol,
                                maxiter=_LANCZOS_RESTARTS)
    except ArpackNoConvergence:
        return None
    return vectors[:, np.argsort(values, kind="stable")[::-1]]


def column_graph_eigenvectors(B: sp.csr_matrix, k: int, *, rng: np.random.Generator | None = None,
                              method: str | None = None, n_jobs: int = 1,
                              dense_dtype: type = np.float64) -> np.ndarray:
    """Generalised eigenvectors of ``(B^T Dx^-1 B, diag(d))`` for the ``k`` largest eigenvalues.

    Input is assumed validated: ``B`` is a non-negative CSR matrix with at least ``k``
    columns.

    Parameters
    ----------
    B : csr_matrix of shape (n_rows, n_columns)
    k : int
    rng : numpy.random.Generator, optional
        Start of the subspace iteration (only that method draws).
    method : {"dense", "rows", "subspace", "lanczos"}, optional
        Default: by the sizes, "dense" and "rows" with Lanczos where it pays (see the
        module docstring). "dense" and "rows" alone are the dense solver always; "lanczos"
        is the column side by Lanczos whatever the sizes (or dense where not safe).
    n_jobs : int, default=1
        Threads for the subspace iteration's products (the result does not depend on it).
    dense_dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Precision of the dense eigensolver of "dense" and "rows" (float32 is about twice
        as fast, and its leading subspace agrees with float64's to about 1e-6).

    Returns
    -------
    vectors : ndarray of shape (n_columns, k)
        ``D^-1/2 V`` with ``V`` the orthonormal leading eigenvectors, largest first.
    """
    n_rows, n_columns = B.shape
    requested = method
    if method is None:  # the smaller side, if it is small enough to be dense
        if n_columns <= min(n_rows, DENSE_MAX):
            method = "dense"
        elif n_rows <= DENSE_MAX:
            method = "rows"
        else:
            method = "dense" if n_columns <= DENSE_MAX else "subspace"
    elif method == "lanczos":
        method = "dense"
    dx = np.asarray(B.sum(axis=1)).ravel()
    dx[dx == 0] = 1e-10
    if method == "dense":
        Wy = B.T @ _scaled(B, 1.0 / dx)
        d = np.asarray(Wy.sum(axis=1)).ravel()
        d[d == 0] = _EPS
        d_inv_sqrt = 1.0 / np.sqrt(d)
        vectors = None
        if requested in (None, "lanczos") and \
                _lanczos_worth(n_columns, k, force=requested == "lanczos"):
            normalized = sp.csr_matrix(sp.diags(d_inv_sqrt) @ Wy @ sp.diags(d_inv_sqrt))
            vectors = _lanczos_top(sp.csr_matrix((normalized + normalized.T) / 2), k,
                                   tol=_lanczos_tol(dense_dtype))
        if vectors is None:
            normalized = d_inv_sqrt[:, None] * Wy.toarray() * d_inv_sqrt[None, :]
            _, vectors = _dense_top((normalized + normalized.T) / 2, k, dense_dtype)
        return d_inv_sqrt[:, None] * vectors
    # Wy 1 = B^T 1: the column degrees are the column sums of B.
    d = np.asarray(B.sum(axis=0)).ravel()
    d[d == 0] = _EPS
    d_inv_sqrt = 1.0 / np.sqrt(d)
    A = _scaled(B, 1.0 / np.sqrt(dx), d_inv_sqrt)
    if method == "rows":
        gram = A @ A.T
        row_vectors = None
        if requested is None and _lanczos_worth(n_rows, k):
            row_vectors = _lanczos_top(sp.csr_matrix((gram + gram.T) / 2), k,
                                       tol=_lanczos_tol(dense_dtype))
        if row_vectors is None:
            gram = gram.toarray()
            _, row_vectors = _dense_top((gram + gram.T) / 2, k, dense_dtype)
        vectors = np.asarray(A.T @ row_vectors)
        norms = np.linalg.norm(vectors, axis=0)
        vectors /= np.where(norms > 0, norms, 1.0)[None, :]
    elif method == "subspace":
        vectors = _subspace_top(A, k, rng or np.random.default_rng(0), n_jobs)
    else:
        raise ValueError(f"method={method!r}; expected 'dense', 'rows' or 'subspace'.")
    return d_inv_sqrt[:, None] * vectors


def _permuted_lower(X: np.ndarray) -> np.ndarray:
    """``P L`` of ``X = P L U``: ``scipy.linalg.lu(X, permute_l=True)[0]``, bit for bit, from
    ``lu_factor`` (the same LAPACK ``getrf``), which releases the GIL where ``lu`` holds it.

    X : (m, n) float64 with m >= n; returns (m, n).
    """
    factors, swaps = scipy.linalg.lu_factor(X, check_finite=False)
    lower = np.tril(factors, -1)
    np.fill_diagonal(lower, 1.0)
    rows = np.arange(X.shape[0])
    for i, j in enumerate(swaps):  # the row interchanges, in order
        rows[i], rows[j] = rows[j], rows[i]
    out = np.empty(lower.shape)  # C order, as lu's (the later products' rounding follows it)
    out[rows] = lower
    return out


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
    # A_b^T as CSR, formed once for the 8 products: a product that gathers rows instead of
    # scattering into them, 15-25 % faster; every entry is the same sum in the same order.
    pairs = map_threads(lambda A_b: (A_b, A_b.T.tocsr()), blocks, n_jobs)

    # Each block's product is also split by the columns of X (a column of A_b^T (A_b X) is
    # that of X's column alone, every entry computed as in the whole product), so that
    # there are enough pieces for the threads, however few the blocks.
    n_parts = min(width, -(-_MIN_PIECES // len(pairs)))
    bounds = np.linspace(0, width, n_parts + 1).astype(int)
    pieces = [(b, slice(lo, hi)) for b in range(len(pairs)) for lo, hi in pairwise(bounds)]

    def gram_times(X: np.ndarray) -> np.ndarray:
        X32 = X.astype(np.float32)

        def piece(item: tuple[int, slice]) -> np.ndarray:
            A_b, A_b_t = pairs[item[0]]
            return A_b_t @ np.asarray(A_b @ np.ascontiguousarray(X32[:, item[1]]))

        # Each block's A_b^T (A_b X), in threads (scipy releases the GIL), summed in block
        # order: the same result for any number of threads.
        parts = map_threads(piece, pieces, n_jobs)
        out = np.empty(X.shape, dtype=np.float64)

        def add_up(p: int) -> None:  # one column part: its blocks' sum, in block order
            total = parts[p].copy()
            for b in range(1, len(pairs)):
                total += parts[b * n_parts + p]
            out[:, bounds[p]:bounds[p + 1]] = total

        map_threads(add_up, range(n_parts), n_jobs)
        return out

    # LU between rounds keeps the basis well conditioned at a fifth of the cost of QR (as
    # scikit-learn's randomized_range_finder does); one QR at the end.
    basis = rng.standard_normal((n, width))
    for _ in range(_ROUNDS):
        basis = _permuted_lower(gram_times(basis))
    basis, _ = scipy.linalg.qr(gram_times(basis), mode="economic", check_finite=False)
    # The Rayleigh-Ritz products by fixed parts (columns of the one, rows of the other) in
    # threads: each entry is computed as in the whole product.
    image = gram_times(basis)
    column_parts = [slice(lo, hi) for lo, hi in pairwise(
        np.linspace(0, width, min(width, _RITZ_PARTS) + 1).astype(int))]
    projected = np.hstack(map_threads(lambda part: basis.T @ image[:, part], column_parts,
                                      n_jobs))
    _, ritz = _dense_top((projected + projected.T) / 2, k)
    return np.concatenate(map_blocks(lambda rows: basis[rows] @ ritz, n, n_jobs,
                                     _RITZ_ROWS))
