"""The best mode's choices one by one: NMI, seed spread, seconds and rank among the peers.

Every configuration clusters every shared data set with ``metric="auto"`` once per seed;
configurations alternate on each data set and seed (so a busy machine slows all alike).
A configuration is ``paper`` (``mode="paper"``), ``best`` (``mode="best"`` with every
choice of ``fastmice._best.CHOICES``) or ``best:FIELD=VALUE,...`` (the best mode with some
choices changed, e.g. ``best:weighting=none``, ``best:replicates=1`` or
``best:max_samples=20000``, CODE_VERSION 11's limit).

Usage, from the repository root::

    python benchmarks/best_ablation.py --seeds 3 paper best best:weighting=none
    python benchmarks/best_ablation.py --part confirmation --seeds 2 best best:joint_candidate=False
    python benchmarks/best_ablation.py --seeds 10 --json paper best > ablation.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peers_table import load_peers, rank_summary  # noqa: E402

import fastmice  # noqa: E402
from fastmice import _best  # noqa: E402
from pipeline.ingest import available_datasets, load_dataset  # noqa: E402

SHARED = REPO.parent / "shared" / "datasets"
#: The shared sets halved, fixed before any choice was measured on them: sorted by name
#: (case-insensitive), the even positions design the choices, the odd ones confirm them.
DESIGN_SETS = ("100Leaves", "ALOI-1079", "Citeseer", "Hdigit", "MNIST-USPS", "MSRCv1",
               "Reuters-1200", "WebKB")
CONFIRMATION_SETS = ("3Sources", "BDGP", "CUB", "mfeat", "Movies", "NGs", "Scene-15",
                     "Wikipedia")


def parse_config(text: str) -> tuple[str, _best.BestChoices]:
    """``"best:weighting=none,replicates=1"`` -> ("best", choices)."""
    mode, _, changes = text.partition(":")
    if mode not in ("paper", "best"):
        raise ValueError(f"configuration {text!r} must start with paper or best")
    values = {}
    for item in filter(None, changes.split(",")):
        name, _, value = item.partition("=")
        current = getattr(_best.BestChoices(), name)
        if value == "None":  # max_samples, joint_heldout: off
            values[name] = None
        elif isinstance(current, bool):
            values[name] = value == "True"
        elif current is None:  # max_samples: a number of samples; narrow_cuts: a margin
            values[name] = float(value) if "." in value else int(value)
        else:
            values[name] = type(current)(value)
    return mode, dataclasses.replace(_best.BestChoices(), **values)


def run_one(Xs, y, k: int, mode: str, choices, seed: int, n_jobs) -> tuple[float, float]:
    """NMI and seconds of one fit."""
    _best.CHOICES = choices
    try:
        start = time.perf_counter()
        labels = fastmice.FastMICE(k, metric="auto", mode=mode, random_state=seed,
                                   n_jobs=n_jobs).fit_predict(Xs)
        seconds = time.perf_counter() - start
    finally:
        _best.CHOICES = _best.BestChoices()
    return fastmice.metrics.clustering_scores(y, labels)["nmi"], seconds


def run(configs: list[str], names: list[str], seeds: list[int], n_jobs) -> dict:
    parsed = {c: parse_config(c) for c in configs}
    results = {c: {} for c in configs}
    for name in names:
        Xs, y = load_dataset(name, SHARED)
        k = int(np.unique(y).size)
        for seed in seeds:
            for c, (mode, choices) in parsed.items():
                nmi, seconds = run_one(Xs, y, k, mode, choices, seed, n_jobs)
                results[c].setdefault(name, []).append((nmi, seconds))
                print(f"{name} seed {seed} {c}: {nmi:.4f} ({seconds:.2f} s)", file=sys.stderr,
                      flush=True)
    return results


def summarise(results: dict, peers: dict) -> dict:
    out = {}
    for c, by_name in results.items():
        rows = {name: {"nmi_mean": float(np.mean([r[0] for r in runs])),
                       "nmi_std": float(np.std([r[0] for r in runs], ddof=1))
                       if len(runs) > 1 else 0.0,
                       "seconds": float(np.mean([r[1] for r in runs]))}
                for name, runs in by_name.items()}
        ranks = rank_summary({n: r["nmi_mean"] for n, r in rows.items()}, peers)
        out[c] = {"rows": rows, **ranks,
                  "mean_nmi": float(np.mean([r["nmi_mean"] for r in rows.values()])),
                  "seconds": float(np.sum([r["seconds"] for r in rows.values()]))}
    return out


def format_summary(summary: dict) -> str:
    configs = list(summary)
    names = list(next(iter(summary.values()))["rows"])
    lines = ["| dataset | " + " | ".join(configs) + " |", "|---|" + "---|" * len(configs)]
    for name in names:
        cells = []
        for c in configs:
            r = summary[c]["rows"][name]
            rank = summary[c]["ranks"].get(name, "-")
            cells.append(f"{r['nmi_mean']:.3f} ± {r['nmi_std']:.3f} (#{rank}, "
                         f"{r['seconds']:.2f} s)")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for label, key, fmt in (("mean NMI", "mean_nmi", "{:.4f}"), ("mean rank", "mean_rank",
                            "{:.2f}"), ("first on", "first", "{}"), ("seconds", "seconds",
                                                                     "{:.1f}")):
        lines.append(f"| {label} | " + " | ".join(fmt.format(summary[c][key])
                                                  for c in configs) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", help="paper, best or best:FIELD=VALUE,...")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", help="comma-separated names (default: all)")
    parser.add_argument("--part", choices=("design", "confirmation"),
                        help="the design or the confirmation half of the shared sets")
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    names = available_datasets(SHARED)
    if args.datasets or args.part:
        chosen = args.datasets.split(",") if args.datasets else \
            DESIGN_SETS if args.part == "design" else CONFIRMATION_SETS
        wanted = {w.lower() for w in chosen}
        names = [n for n in names if n.lower() in wanted]
    results = run(args.configs, names, list(range(args.seeds)), args.n_jobs)
    summary = summarise(results, load_peers())
    print(json.dumps(summary, indent=1) if args.json else format_summary(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
