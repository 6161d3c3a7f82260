"""The leading eigenpairs of a dense symmetric matrix, without holding the GIL.

``scipy.linalg.eigh`` holds Python's global interpreter lock for the whole LAPACK call (its
f2py wrappers do not release it), so while one view group's thread solves its eigenproblem
the other threads cannot run a line of Python: two groups' eigen steps in two threads took
as long as one after the other (side 617, 30 eigenpairs: 12 ms each either way). The same
LAPACK routine (``?syevr``, MRRR, the driver ``eigh(driver="evr")`` uses) is called here
through ``ctypes``, which releases the lock during a foreign call: the results are bit for
bit those of ``scipy.linalg.eigh`` (``tests/unit/test_small_paths.py``) and two threads
solve two problems in about half the time.

The routine comes from the OpenBLAS that scipy's wheels bundle (``scipy.libs``, symbols
prefixed ``scipy_``), so it is the very code scipy calls. Where it is not found (a scipy
built against another LAPACK), :func:`top_eigenpairs` falls back to ``scipy.linalg.eigh``.
"""

from __future__ import annotations

import ctypes
import glob
import os

import numpy as np
import scipy
import scipy.linalg

__all__ = ["top_eigenpairs"]

_ROW_MAJOR = 101


def _load_syevr() -> dict[np.dtype, ctypes._CFuncPtr]:
    """LAPACKE ``ssyevr``/``dsyevr`` of scipy's bundled OpenBLAS, by dtype ({} if absent)."""
    pattern = os.path.join(os.path.dirname(os.path.dirname(scipy.__file__)), "scipy.libs",
                           "libscipy_openblas*.so*")
    functions = {}
    for path in sorted(glob.glob(pattern)):
        try:
            library = ctypes.CDLL(path)
            for prefix, ctype in (("s", ctypes.c_float), ("d", ctypes.c_double)):
                function = getattr(library, f"scipy_LAPACKE_{prefix}syevr")
                function.restype = ctypes.c_int
                function.argtypes = [
                    ctypes.c_int, ctypes.c_char, ctypes.c_char, ctypes.c_char, ctypes.c_int,
                    ctypes.c_void_p, ctypes.c_int, ctype, ctype, ctypes.c_int, ctypes.c_int,
                    ctype, ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.c_int, ctypes.c_void_p]
                functions[np.dtype(ctype)] = function
        except (OSError, AttributeError):
            functions = {}
            continue
        return functions
    return functions


_SYEVR = _load_syevr()


def top_eigenpairs(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest eigenpairs of a symmetric matrix, in ascending order.

    ``scipy.linalg.eigh(matrix, subset_by_index=[n - k, n - 1], driver="evr")`` (the lower
    triangle is read), computed with the GIL released where the bundled LAPACK is found.
    MRRR can find fewer eigenpairs than asked where eigenvalues are repeated many times (a
    graph of many connected components has eigenvalue 1 once per component; seen in single
    precision on one BLAS thread, where scipy returns the short result without a word);
    the matrix is then solved again in double precision by divide and conquer, which finds
    them all.

    Parameters
    ----------
    matrix : ndarray of shape (n, n), float32 or float64
        Overwritten.
    k : int
        1 <= k <= n.

    Returns
    -------
    values : ndarray of shape (k,)
    vectors : ndarray of shape (n, k)
    """
    n = matrix.shape[0]
    original = matrix.copy()
    values, vectors = _evr(matrix, k)
    if len(values) == k:
        return values, vectors
    # numpy's divide and conquer (every eigenpair) releases the GIL too.
    values, vectors = np.linalg.eigh(original.astype(np.float64))
    return (values[n - k:].astype(matrix.dtype, copy=False),
            vectors[:, n - k:].astype(matrix.dtype, copy=False))


def _evr(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """?syevr for the ``k`` largest eigenpairs: those it found (possibly fewer)."""
    n = matrix.shape[0]
    function = _SYEVR.get(matrix.dtype)
    if function is None:
        return scipy.linalg.eigh(matrix, subset_by_index=[n - k, n - 1], overwrite_a=True,
                                 check_finite=False, driver="evr")
    a = np.ascontiguousarray(matrix)
    values = np.empty(n, dtype=a.dtype)
    vectors = np.empty((n, k), dtype=a.dtype)
    support = np.empty(2 * k, dtype=np.intc)
    found = ctypes.c_int(0)
    info = function(_ROW_MAJOR, b"V", b"I", b"L", n, a.ctypes.data, n, 0.0, 0.0, n - k + 1, n,
                    0.0, ctypes.byref(found), values.ctypes.data, vectors.ctypes.data, k,
                    support.ctypes.data)
    if info != 0:
        raise np.linalg.LinAlgError(f"?syevr failed with info={info}.")
    return values[:found.value], vectors[:, :found.value]
