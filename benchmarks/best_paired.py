"""The ``paired`` shape (``benchmarks/scale_data.py``): both modes beside k-means on the
concatenated views, and the best mode with a share of its groups seeing every view.

Usage, from the repository root::

    python benchmarks/best_paired.py --samples 20000
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_data import paired_views
from sklearn.cluster import KMeans

from fastmice import FastMICE, _best
from fastmice.metrics import clustering_scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args(argv)
    Xs, y = paired_views(args.samples, 20, seed=0)
    runs = [("paper", 0.0), ("best", 0.0), ("best", 0.5), ("best", 1.0)]
    for mode, share in runs:
        _best.CHOICES = dataclasses.replace(_best.BestChoices(), all_view_groups=share,
                                            all_view_groups_euclidean=share)
        start = time.perf_counter()
        labels = FastMICE(20, mode=mode, random_state=0, n_jobs=args.n_jobs).fit_predict(Xs)
        print(f"{mode} (groups seeing every view: {share:.0%}): NMI "
              f"{clustering_scores(y, labels)['nmi']:.4f}, {time.perf_counter() - start:.1f} s")
    _best.CHOICES = _best.BestChoices()
    start = time.perf_counter()
    labels = KMeans(20, n_init=1, random_state=0).fit_predict(np.hstack(Xs))
    print(f"k-means on the concatenated views: NMI {clustering_scores(y, labels)['nmi']:.4f}, "
          f"{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
