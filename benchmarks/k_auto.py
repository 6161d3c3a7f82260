"""``n_clusters="auto"`` on the shared datasets: the k chosen beside the true one, and the NMI.

For every dataset of ``../shared/datasets`` (with the metric ``INDEX.md`` gives it) and every
seed, three numbers of one seed's runs:

* ``k auto``: the k ``FastMICE("auto")`` chooses (the largest eigengap of its consensus
  graph), and the NMI of its labels;
* ``NMI true k``: ``FastMICE(k_true)``'s NMI, the run a user who knows k makes;
* ``NMI auto ensemble, true k``: the consensus of the auto run's own base clusterings cut
  into the true k (what the choice of k alone costs).

NMI is max-normalised, as in the paper. Prints a markdown table (one row a dataset, seeds
joined by ``/``), then the summary lines. Progress goes to stderr.

Usage, from the repository root::

    python benchmarks/k_auto.py                          # 16 datasets, 3 seeds
    python benchmarks/k_auto.py --datasets mfeat --seeds 5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.quality import load_index_metrics  # noqa: E402
from fastmice import FastMICE, consensus_partition  # noqa: E402
from fastmice.metrics import clustering_scores  # noqa: E402
from pipeline.ingest import available_datasets, load_dataset  # noqa: E402


def run_dataset(name: str, metric: str, seeds: list[int], n_jobs: int) -> dict:
    """The chosen k, its NMI, the NMI at the true k (both ensembles) per seed."""
    Xs, y = load_dataset(name, DATASETS)
    k_true = len(np.unique(y))
    row = {"name": name, "metric": metric, "n": len(y), "k": k_true, "runs": []}
    for seed in seeds:
        start = time.perf_counter()
        auto = FastMICE("auto", metric=metric, random_state=seed, n_jobs=n_jobs).fit(Xs)
        seconds = time.perf_counter() - start
        given = FastMICE(k_true, metric=metric, random_state=seed, n_jobs=n_jobs).fit(Xs)
        at_true = consensus_partition(auto.base_labels_, k_true, seed=auto.root_seed_)
        row["runs"].append({
            "k": auto.n_clusters_, "top": [k for k, _ in auto.k_candidates_[:3]],
            "nmi_auto": clustering_scores(y, auto.labels_)["nmi"],
            "nmi_true": clustering_scores(y, given.labels_)["nmi"],
            "nmi_auto_ensemble_true_k": clustering_scores(y, at_true.labels_)["nmi"],
            "seconds": seconds})
        print(f"{name} seed {seed}: k {auto.n_clusters_} (true {k_true}), "
              f"{row['runs'][-1]['nmi_auto']:.3f} vs {row['runs'][-1]['nmi_true']:.3f}, "
              f"{seconds:.1f} s", file=sys.stderr, flush=True)
    return row


def format_table(rows: list[dict]) -> str:
    def joined(row: dict, key: str, fmt: str = "{:.3f}") -> str:
        return "/".join(fmt.format(r[key]) for r in row["runs"])

    lines = ["| dataset | metric | N | true k | chosen k | top 3 (seed 0) | NMI auto | "
             "NMI true k | NMI auto ensemble, true k |",
             "|---|---|---:|---:|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['metric']} | {row['n']} | {row['k']} | "
            f"{joined(row, 'k', '{}')} | {row['runs'][0]['top']} | {joined(row, 'nmi_auto')} | "
            f"{joined(row, 'nmi_true')} | {joined(row, 'nmi_auto_ensemble_true_k')} |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    runs = [(row, r) for row in rows for r in row["runs"]]
    exact = sum(r["k"] == row["k"] for row, r in runs)
    near = sum(abs(r["k"] - row["k"]) <= max(1, row["k"] // 5) for row, r in runs)
    mean = {key: np.mean([r[key] for _, r in runs])
            for key in ("nmi_auto", "nmi_true", "nmi_auto_ensemble_true_k")}
    return (f"* {len(runs)} runs: k exact in {exact}, within max(1, k/5) in {near}\n"
            f"* mean NMI: auto {mean['nmi_auto']:.3f}, true k {mean['nmi_true']:.3f}, "
            f"auto ensemble at the true k {mean['nmi_auto_ensemble_true_k']:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", help="comma-separated names (default: all)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args(argv)
    if not DATASETS.is_dir():
        print(f"no datasets at {DATASETS}", file=sys.stderr)
        return 1
    metrics = load_index_metrics(DATASETS / "INDEX.md")
    names = args.datasets.split(",") if args.datasets else available_datasets(DATASETS)
    rows = [run_dataset(name, metrics.get(name.lower(), "euclidean"), list(range(args.seeds)),
                        args.n_jobs) for name in names]
    print(format_table(rows))
    print()
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
