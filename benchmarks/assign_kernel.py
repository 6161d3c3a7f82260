"""What a compiled assignment kernel would buy: the share of a fit in the k-means
assignments through the sparse graph, and a fused kernel against scipy's product.

Two measurements (issue 34's 2-core target asks for about a sixth less work):

* ``share DIR``: one ``FastMICE(400, random_state=0, n_jobs=2)`` fit of a folder written by
  ``benchmarks/scale.py`` (``view0.npy``...), with the wall seconds spent inside
  :class:`fastmice._rows.TransferRows` and :class:`~fastmice._rows.MatrixRows`' assignments
  and centre sums summed over their calls (concurrent calls both count: an upper bound on
  their thread-seconds), beside the fit's wall and CPU seconds and its labels' hash.
* ``kernel``: the assignment ``argmax_j (R G)_ij`` of a sparse ``R`` (a few entries a row)
  and a dense ``G``, in blocks of 2,048 rows as the library runs it (scipy's CSR product,
  then ``argmax``), against a fused kernel compiled by numba (the product into a buffer of
  256 rows, then numpy's ``argmax``), if numba is installed (it is not a dependency), on the
  shapes of a base clustering (1,000 columns, 5 entries a row, k = 608) and of the
  consensus (12,000 columns, 20 entries, k = 400). Both give the same labels and values bit
  for bit (the same float32 additions in the same order).

Usage::

    python benchmarks/assign_kernel.py share /tmp/fastmice-scale/latent-398191-k400
    pip install numba && python benchmarks/assign_kernel.py kernel
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = {"base": (1000, 5, 608), "consensus": (12000, 20, 400)}
BLOCK, SUB = 2048, 256


def share(folder: Path) -> dict:
    """The fit's seconds, and the seconds inside each timed method (module docstring)."""
    import fastmice._rows as rows
    from fastmice import FastMICE

    spent, calls, lock = collections.defaultdict(float), collections.Counter(), threading.Lock()

    def timed(cls: type, name: str) -> None:
        method = getattr(cls, name)

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                with lock:
                    spent[f"{cls.__name__}.{name}"] += time.perf_counter() - started
                    calls[f"{cls.__name__}.{name}"] += 1

        setattr(cls, name, wrapper)

    for cls in (rows.TransferRows, rows.MatrixRows):
        timed(cls, "assign")
        timed(cls, "center_sums")
    Xs = [np.load(path) for path in sorted(folder.glob("view*.npy"))]
    wall, cpu = time.perf_counter(), time.process_time()
    labels = FastMICE(400, random_state=0, n_jobs=2).fit(Xs).labels_
    return {"fit_s": round(time.perf_counter() - wall, 1),
            "cpu_s": round(time.process_time() - cpu, 1),
            "labels": hashlib.sha256(labels.astype(np.int64).tobytes()).hexdigest()[:16],
            "inside_s": {name: [round(s, 1), calls[name]] for name, s in spent.items()}}


def _scipy_assign(R: sp.csr_matrix, G: np.ndarray, rows: slice) -> tuple:
    scores = np.asarray(R[rows] @ G)
    labels = scores.argmax(axis=1)
    return labels, scores[np.arange(len(labels)), labels]


def _fused(product_into):
    def assign(R: sp.csr_matrix, G: np.ndarray, rows: slice) -> tuple:
        n = rows.stop - rows.start
        labels, values = np.empty(n, np.int64), np.empty(n, np.float32)
        buffer = np.empty((SUB, G.shape[1]), np.float32)
        for first in range(0, n, SUB):
            last = min(first + SUB, n)
            scores = buffer[:last - first]
            product_into(R.indptr, R.indices, R.data, G, rows.start + first, scores)
            labels[first:last] = scores.argmax(axis=1)
            values[first:last] = scores[np.arange(last - first), labels[first:last]]
        return labels, values
    return assign


def _numba_product():
    import numba

    @numba.njit(nogil=True, boundscheck=False)
    def product_into(indptr, indices, data, G, start, out):
        for r in range(out.shape[0]):
            row = out[r]
            row[:] = 0
            for t in range(indptr[start + r], indptr[start + r + 1]):
                weight, source = data[t], G[indices[t]]
                for j in range(G.shape[1]):
                    row[j] += weight * source[j]

    return product_into


def kernel(n_rows: int, repeats: int) -> list[dict]:
    """GMAC/s of each way on each shape, and whether they agree bit for bit."""
    try:
        ways = {"scipy": _scipy_assign, "fused": _fused(_numba_product())}
    except ImportError:
        ways = {"scipy": _scipy_assign}
    out = []
    for shape, (n_columns, per_row, k) in SHAPES.items():
        rng = np.random.default_rng(0)
        G = rng.standard_normal((n_columns, k)).astype(np.float32)
        indices = np.sort(rng.integers(0, n_columns, (n_rows, per_row)), axis=1).ravel()
        R = sp.csr_matrix((rng.random(n_rows * per_row).astype(np.float32), indices,
                           np.arange(0, n_rows * per_row + 1, per_row)), shape=(n_rows, n_columns))
        blocks = [slice(a, min(a + BLOCK, n_rows)) for a in range(0, n_rows, BLOCK)]
        results, best = {}, collections.defaultdict(lambda: float("inf"))
        for _ in range(repeats):  # alternately, the host is noisy
            for name, way in ways.items():
                started = time.perf_counter()
                results[name] = [way(R, G, b) for b in blocks]
                best[name] = min(best[name], time.perf_counter() - started)
        same = all(all((a[0] == b[0]).all() and (a[1] == b[1]).all()
                       for a, b in zip(results["scipy"], other, strict=True))
                   for other in results.values())
        out.append({"shape": shape, "same_bits": same,
                    **{f"{name}_gmac_s": round(n_rows * per_row * k / s / 1e9, 2)
                       for name, s in best.items()}})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("share").add_argument("folder", type=Path)
    timing = sub.add_parser("kernel")
    timing.add_argument("--rows", type=int, default=100_000)
    timing.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows = [share(args.folder)] if args.command == "share" else kernel(args.rows, args.repeats)
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
