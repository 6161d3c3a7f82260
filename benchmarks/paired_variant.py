"""The harder ``paired`` variant (``scale_data.paired_views`` with closer clusters): the
library's NMI and seconds per fit, one JSON line each, then the mean NMI per mode.

Usage, from the repository root (points as ``n_samples:separation:data_seed``)::

    python benchmarks/paired_variant.py --seeds 0,1,2,3 50000:0.6:4 50000:0.7:5
    python benchmarks/paired_variant.py --modes paper,best --seeds 0 200000:0.65:4
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_data import paired_views

from fastmice import FastMICE
from fastmice.metrics import clustering_scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("points", nargs="+", help="n_samples:separation:data_seed")
    parser.add_argument("--seeds", default="0", help="comma-separated library seeds")
    parser.add_argument("--modes", default="best", help="comma-separated: best, paper")
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args(argv)
    scores: dict[str, list[float]] = {}
    for point in args.points:
        n_samples, separation, data_seed = point.split(":")
        Xs, y = paired_views(int(n_samples), 20, separation=float(separation),
                             seed=int(data_seed))
        for mode in args.modes.split(","):
            for seed in map(int, args.seeds.split(",")):
                started = time.perf_counter()
                labels = FastMICE(20, mode=mode, random_state=seed,
                                  n_jobs=args.n_jobs).fit(Xs).labels_
                nmi = clustering_scores(y, labels)["nmi"]
                scores.setdefault(mode, []).append(nmi)
                print(json.dumps({"point": point, "mode": mode, "seed": seed,
                                  "nmi": round(nmi, 4),
                                  "seconds": round(time.perf_counter() - started, 2)}),
                      flush=True)
    for mode, values in scores.items():
        print(f"{mode}: mean NMI {sum(values) / len(values):.4f} over {len(values)} fits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
