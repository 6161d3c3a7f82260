"""How well FastMICE.predict reproduces labels_ on the training data (issue: ARI >= 0.9).

Usage: python benchmarks/predict_agreement.py [--datasets mfeat,Hdigit] [--seeds 3]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastmice import FastMICE  # noqa: E402
from pipeline.ingest import load_dataset  # noqa: E402

SHARED_DATASETS = ROOT.parent / "shared" / "datasets"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="mfeat,Hdigit")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    print("| dataset | seed | ARI(labels_, predict(train)) | fit s | predict s |")
    print("|---|---|---|---|---|")
    for name in args.datasets.split(","):
        Xs, y = load_dataset(name, SHARED_DATASETS)
        k = len(np.unique(y))
        for seed in range(args.seeds):
            start = time.perf_counter()
            model = FastMICE(k, random_state=seed).fit(Xs)
            fitted = time.perf_counter()
            predicted = model.predict(Xs)
            done = time.perf_counter()
            ari = adjusted_rand_score(model.labels_, predicted)
            print(f"| {name} | {seed} | {ari:.4f} | {fitted - start:.1f} | {done - fitted:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
