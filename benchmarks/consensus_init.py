"""The consensus's k-means start on the ``paired`` shape: fastmice's random rows against
k-means++ on the same consensus embedding.

Fits ``FastMICE`` (paper mode) on ``benchmarks/scale_data.py``'s ``paired`` set, rebuilds
the consensus embedding it cut (its graph's rows through the anchor-side eigenvectors, unit
rows), and clusters that embedding again with scikit-learn's ``KMeans`` from k-means++ and
from random rows (one start each, several seeds). The embedding is fastmice's; only the
k-means start differs.

Usage, from the repository root::

    python benchmarks/consensus_init.py --samples 200000 --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_data import paired_views
from sklearn.cluster import KMeans

from fastmice import FastMICE
from fastmice._tcut import _row_stochastic
from fastmice.metrics import clustering_scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args(argv)
    Xs, y = paired_views(args.samples, 20, seed=0)
    model = FastMICE(20, random_state=0, n_jobs=args.n_jobs).fit(Xs)
    consensus = model.consensus_
    B = consensus.graph(model.base_labels_).tocsr().astype(np.float64)
    embedding = np.asarray(_row_stochastic(B) @ consensus.partition.anchor_embedding)
    embedding /= np.linalg.norm(embedding, axis=1, keepdims=True) + 1e-10
    print(f"fastmice (random rows, 5 starts): NMI "
          f"{clustering_scores(y, model.labels_)['nmi']:.4f}")
    for seed in (int(s) for s in args.seeds.split(",")):
        for init in ("k-means++", "random"):
            labels = KMeans(20, init=init, n_init=1, random_state=seed).fit_predict(embedding)
            print(f"KMeans init={init} seed {seed} on the same embedding: NMI "
                  f"{clustering_scores(y, labels)['nmi']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
