"""Write a synthetic multi-view dataset as a directory of view*.npy files plus labels.npy.

Usage: python scripts/make_demo_data.py DIR [--n-samples N] [--k K] [--seed S]
"""

import argparse
from pathlib import Path

from fastmice.datasets import make_multiview_blobs
from pipeline.ingest import save_views_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--n-samples", type=int, default=5000)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--dims", default="40,60,30", help="features per view, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dims = [int(d) for d in args.dims.split(",")]
    Xs, y = make_multiview_blobs(args.n_samples, len(dims), args.k, dims,
                                 random_state=args.seed)
    save_views_dir(args.directory, Xs, y, overwrite=True)
    print(f"wrote {args.n_samples} samples, {len(dims)} views {dims}, k={args.k} to "
          f"{args.directory}/")


if __name__ == "__main__":
    main()
