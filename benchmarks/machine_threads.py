"""What more threads buy on this machine, kernel by kernel: memory streaming against arithmetic.

Weak scaling: each of J threads does the same work on its own arrays (numpy and one-thread
BLAS release the GIL), so on a machine whose cores do not slow each other down the wall
stays flat as J grows. Per kernel and J it prints the wall and the throughput per thread
relative to one thread (1.0: no slowdown; 0.5: each thread runs at half speed):

``stream``   the sum of a float32 array of ``--stream-mib`` MiB per thread (far beyond any
             cache): bytes from memory, as the search's gathers and the k-means' passes
             over the graph rows.
``gather``   a block of 65,536 consecutive rows of a shared float32 array (``--gather-mib``
             MiB), half its columns at random (``np.take`` into a buffer): the search's
             block gather, a different block each time.
``sgemm``    a float32 product of 1,024 x 1,024 x 1,024 (12 MiB, in the cache of one core
             or near it): arithmetic.
``sgemm-stream``  a 65,536 x 256 block times 256 x 1,000 anchors (the search's product
             shape), a fresh block each time (64 MiB a thread).

Usage::

    python benchmarks/machine_threads.py --threads 1,2 --json
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

MIB = 2**20


def _weak(work: Callable[[int], float], threads: int) -> float:
    """Wall seconds for ``threads`` threads each running ``work(i)`` once, started together."""
    start = threading.Barrier(threads + 1)

    def run(i: int) -> None:
        start.wait()
        work(i)

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in pool:
        thread.join()
    return time.perf_counter() - began


def kernels(args: argparse.Namespace, most: int) -> dict[str, tuple[Callable[[int], float], float]]:
    """Each kernel's work function and the bytes or flops it does once."""
    rng = np.random.default_rng(0)
    # The values do not matter to the speed; filling is faster than drawing.
    stream = [np.full(args.stream_mib * MIB // 4, 0.5, np.float32) for _ in range(most)]
    columns = 2 * args.gather_columns
    shared = np.full((args.gather_mib * MIB // (4 * columns), columns), 0.5, np.float32)
    half = np.sort(rng.choice(columns, args.gather_columns, replace=False))
    taken = [np.empty((65_536, args.gather_columns), np.float32) for _ in range(most)]
    n_blocks = shared.shape[0] // 65_536
    square = [rng.random((1024, 1024), dtype=np.float32) for _ in range(most)]
    blocks = [np.full((4, 65_536, 256), 0.5, np.float32) for _ in range(most)]
    anchors = rng.random((256, 1000), dtype=np.float32)

    def run_stream(i: int) -> float:
        return float(sum(stream[i].sum() for _ in range(args.repeats)))

    def run_gather(i: int) -> float:
        for r in range(args.repeats):
            first = (i * args.repeats + r) % n_blocks * 65_536
            np.take(shared[first:first + 65_536], half, axis=1, out=taken[i], mode="clip")
        return float(taken[i][0, 0])

    def run_sgemm(i: int) -> float:
        return float(sum((square[i] @ square[i])[0, 0] for _ in range(args.repeats)))

    def run_sgemm_stream(i: int) -> float:
        return float(sum((blocks[i][r % 4] @ anchors)[0, 0] for r in range(args.repeats)))

    gathered = 65_536 * columns * 4  # the rows' bytes: whole cache lines are read
    return {"stream": (run_stream, args.stream_mib * MIB * args.repeats),
            "gather": (run_gather, gathered * args.repeats),
            "sgemm": (run_sgemm, 2 * 1024**3 * args.repeats),
            "sgemm-stream": (run_sgemm_stream, 2 * 65_536 * 256 * 1000 * args.repeats)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2,4,8,16",
                        type=lambda text: [int(n) for n in text.split(",")])
    parser.add_argument("--stream-mib", type=int, default=512)
    parser.add_argument("--gather-mib", type=int, default=2048)
    parser.add_argument("--gather-columns", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="one JSON line, no table")
    args = parser.parse_args(argv)
    threads = [j for j in args.threads if j <= (os.cpu_count() or 1)]
    rows = []
    with threadpool_limits(1):
        for name, (work, amount) in kernels(args, max(threads)).items():
            work(0)  # warm: pages touched, BLAS started
            first = None
            for j in threads:
                wall = _weak(work, j)
                first = first or wall
                rows.append({"kernel": name, "threads": j, "wall": round(wall, 3),
                             "per_thread": round(amount / wall / 1e9, 2),
                             "vs_first": round(first / wall, 2)})
    result = {"cores": os.cpu_count(), "numpy": np.__version__, "rows": rows}
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{'kernel':<13} {'threads':>7} {'wall s':>7} {'G/s a thread':>12} {'vs first':>8}")
    for r in rows:
        print(f"{r['kernel']:<13} {r['threads']:>7} {r['wall']:>7} {r['per_thread']:>12} "
              f"{r['vs_first']:>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
