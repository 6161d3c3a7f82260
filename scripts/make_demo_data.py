"""Write a synthetic multi-view dataset as a directory of view*.npy files plus labels.npy.

Usage: python scripts/make_demo_data.py DIR [--n-samples N] [--k K] [--seed S] [--new NEWDIR]

With ``--new NEWDIR``, ``--n-new`` more samples of the same clusters go to NEWDIR: a batch
for ``fastmice append`` and ``fastmice recluster``.
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
    parser.add_argument("--new", type=Path, metavar="NEWDIR",
                        help="also write --n-new more samples of the same clusters here")
    parser.add_argument("--n-new", type=int, default=500)
    args = parser.parse_args()
    dims = [int(d) for d in args.dims.split(",")]
    n_new = args.n_new if args.new is not None else 0
    Xs, y = make_multiview_blobs(args.n_samples + n_new, len(dims), args.k, dims,
                                 random_state=args.seed)
    first = slice(0, args.n_samples)
    save_views_dir(args.directory, [X[first] for X in Xs], y[first], overwrite=True)
    print(f"wrote {args.n_samples} samples, {len(dims)} views {dims}, k={args.k} to "
          f"{args.directory}/")
    if args.new is not None:
        rest = slice(args.n_samples, None)
        save_views_dir(args.new, [X[rest] for X in Xs], y[rest], overwrite=True)
        print(f"wrote {n_new} more samples to {args.new}/")


if __name__ == "__main__":
    main()
