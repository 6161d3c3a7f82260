"""One library fit of the scale data by the fastmice of any checkout: one JSON line.

``FastMICE(k, random_state=0, n_jobs=J).fit(Xs)`` on the views of a folder written by
``benchmarks/scale.py`` (``view0.npy``, ``view1.npy``, ..., ``labels.npy``), loaded into
memory first, with the ``fastmice`` package of ``CHECKOUT`` (a worktree of an older commit, to
compare code across versions on the same host; run them alternately, the host is noisy).
Prints the wall and process CPU seconds, the busy share (CPU / (wall x J)), the NMI, a hash
of the labels and the peak RSS.

Usage::

    git worktree add /tmp/old f1a32bc
    python benchmarks/fit_checkout.py /tmp/old /tmp/fastmice-scale/latent-398191-k400
    python benchmarks/fit_checkout.py . /tmp/fastmice-scale/latent-398191-k400
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--k", type=int, default=400)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--mode", choices=("paper", "best"),
                        help="the estimator's mode (default: its default)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.checkout.resolve()))
    import numpy as np
    from sklearn.metrics import normalized_mutual_info_score

    import fastmice

    views = sorted(args.data.glob("view*.npy"), key=lambda path: int(path.stem[4:]))
    Xs = [np.load(path) for path in views]
    truth = np.load(args.data / "labels.npy")
    cpu, wall = time.process_time(), time.perf_counter()
    mode = {} if args.mode is None else {"mode": args.mode}
    labels = fastmice.FastMICE(args.k, random_state=0, n_jobs=args.n_jobs, **mode).fit(Xs).labels_
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({
        "checkout": str(args.checkout), "code_version": fastmice.CODE_VERSION,
        "n_jobs": args.n_jobs, "mode": args.mode or "default",
        "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "busy": round(cpu / wall / args.n_jobs, 3),
        "nmi": round(float(normalized_mutual_info_score(truth, labels)), 4),
        "labels_hash": hashlib.sha256(np.asarray(labels, np.int64).tobytes()).hexdigest()[:16],
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}))


if __name__ == "__main__":
    main()
