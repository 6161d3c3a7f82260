"""``n_clusters="auto"`` on a design part and a confirmation part: the k chosen beside the
true one, the NMI at each, and the seconds against a fit at the true k.

The parts were fixed before the rule was chosen (docs/quality.md, "Choosing k"):

* **Shared datasets** (``../shared/datasets``): the 16 names sorted case-insensitively,
  positions 0, 2, 4, ... are the design part, 1, 3, 5, ... the confirmation part.
* **Generated sets** with a known k (:func:`generated_set`): latent Gaussian clusters seen
  through three random projections with noise, ``N = max(400, 15 k)``, balanced sizes or
  skewed ones (log-uniform over a 10-fold range). Design family: seed 1, 24 latent
  dimensions, views of 60/40/30 features, within-cluster spread 1.0, k in
  2/6/15/40/100/400. Confirmation family: seed 2, 20 latent dimensions, views of 80/30/20,
  spread 0.9, k in 3/8/20/50/150/400.
* **A fresh family** (``--part fresh``), written down on 2026-11-27 before any rule ran on
  it, for rules chosen after the two parts above had both been seen: seed 3, 22 latent
  dimensions, views of 70/50/25, spread 0.95, k in 4/10/25/60/120/250.

For every set: ``FastMICE("auto", mode=MODE, random_state=SEED, n_jobs=1)`` (its k, the NMI
of its labels, its CPU seconds) and ``FastMICE(k_true, ...)`` (the NMI and CPU seconds of a
user who knows k). NMI is max-normalised, as in the paper. CPU seconds
(``time.process_time``, one thread) are steadier than wall seconds on a shared machine.
Prints one markdown table per part and its summary: k within ``max(1, k // 5)`` of the
true k, and the mean NMI at the chosen k against the mean NMI at the true k.

Usage, from the repository root::

    python benchmarks/k_auto.py --part design
    python benchmarks/k_auto.py --part confirmation
    python benchmarks/k_auto.py --sets mfeat,gen:c:20:s      # chosen sets
    python benchmarks/k_auto.py --part design --at-chosen    # and a fit at the chosen k

``--at-chosen`` also fits ``FastMICE(chosen k, ...)`` (the fit at the true k where they are
equal): what choosing k before the view groups are drawn would give (their base clusterings
then draw their k around the chosen one instead of spreading it over the candidates).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fastmice import FastMICE  # noqa: E402
from fastmice.metrics import clustering_scores  # noqa: E402

SHARED = ("100Leaves", "3Sources", "ALOI-1079", "BDGP", "Citeseer", "CUB", "Hdigit", "mfeat",
          "MNIST-USPS", "Movies", "MSRCv1", "NGs", "Reuters-1200", "Scene-15", "WebKB",
          "Wikipedia")
#: family: (seed, latent dimensions, view widths, within-cluster spread, true ks)
FAMILIES = {"d": (1, 24, (60, 40, 30), 1.0, (2, 6, 15, 40, 100, 400)),
            "c": (2, 20, (80, 30, 20), 0.9, (3, 8, 20, 50, 150, 400)),
            "f": (3, 22, (70, 50, 25), 0.95, (4, 10, 25, 60, 120, 250))}


def parts() -> dict[str, list[str]]:
    """The design and confirmation sets, by the rule of the module docstring."""
    ordered = sorted(SHARED, key=str.lower)
    out = {}
    for part, family, offset in (("design", "d", 0), ("confirmation", "c", 1)):
        generated = [f"gen:{family}:{k}:{sizes}" for k in FAMILIES[family][4]
                     for sizes in ("b", "s")]
        out[part] = ordered[offset::2] + generated
    out["fresh"] = [f"gen:f:{k}:{sizes}" for k in FAMILIES["f"][4] for sizes in ("b", "s")]
    return out


def generated_set(k: int, balanced: bool, family: str) -> tuple[list[np.ndarray], np.ndarray]:
    """Views (float64) and labels of generated set ``gen:family:k:(b|s)``."""
    seed, latent, widths, spread, _ = FAMILIES[family]
    rng = np.random.default_rng([seed, k, int(balanced)])
    n = max(400, 15 * k)
    if balanced:
        sizes = np.full(k, n // k)
        sizes[: n - sizes.sum()] += 1
    else:
        weights = np.exp(rng.uniform(0, np.log(10.0), k))
        sizes = np.maximum(3, np.floor(weights / weights.sum() * n).astype(int))
        sizes[np.argmax(sizes)] += n - sizes.sum()
    y = np.repeat(np.arange(k), sizes)
    rng.shuffle(y)
    centres = rng.standard_normal((k, latent)) * np.sqrt(2.0)
    z = centres[y] + rng.standard_normal((len(y), latent)) * spread
    views = []
    for width, noise in zip(widths, (1.0, 1.3, 1.8), strict=True):
        projection = rng.standard_normal((latent, width)) / np.sqrt(latent)
        views.append(z @ projection + noise * spread * rng.standard_normal((len(y), width)))
    return views, y


def load_set(name: str):
    if name.startswith("gen:"):
        _, family, k, sizes = name.split(":")
        return generated_set(int(k), sizes == "b", family)
    from pipeline.ingest import load_dataset

    return load_dataset(name, DATASETS)


def run_set(name: str, mode: str, seed: int, at_chosen: bool = False) -> dict:
    """The chosen k, its NMI and CPU seconds, beside the fit at the true k (and, with
    ``at_chosen``, the NMI and CPU seconds of a fit at the chosen k)."""
    Xs, y = load_set(name)
    k_true = len(np.unique(y))
    start = time.process_time()
    auto = FastMICE("auto", mode=mode, random_state=seed, n_jobs=1).fit(Xs)
    auto_s = time.process_time() - start
    start = time.process_time()
    given = FastMICE(k_true, mode=mode, random_state=seed, n_jobs=1).fit(Xs)
    given_s = time.process_time() - start
    row = {"name": name, "n": len(y), "k": k_true, "chosen": auto.n_clusters_,
           "top": [k for k, _ in auto.k_candidates_[:3]],
           "k_max": max(k for k, _ in auto.k_candidates_),
           "nmi_auto": clustering_scores(y, auto.labels_)["nmi"],
           "nmi_true": clustering_scores(y, given.labels_)["nmi"],
           "auto_s": auto_s, "true_s": given_s}
    print(f"{name}: k {row['chosen']} (true {k_true}), NMI {row['nmi_auto']:.3f} vs "
          f"{row['nmi_true']:.3f}, {auto_s:.1f} s vs {given_s:.1f} s", file=sys.stderr,
          flush=True)
    if at_chosen:
        row["nmi_at_chosen"], row["at_chosen_s"] = row["nmi_true"], given_s
        if auto.n_clusters_ != k_true:
            start = time.process_time()
            fit = FastMICE(auto.n_clusters_, mode=mode, random_state=seed, n_jobs=1).fit(Xs)
            row["at_chosen_s"] = time.process_time() - start
            row["nmi_at_chosen"] = clustering_scores(y, fit.labels_)["nmi"]
    return row


def near(chosen: int, k_true: int) -> bool:
    return abs(chosen - k_true) <= max(1, k_true // 5)


def format_table(rows: list[dict]) -> str:
    extra = "nmi_at_chosen" in rows[0] if rows else False
    lines = ["| set | N | true k | chosen k | top 3 | candidates | NMI at chosen k | "
             + ("NMI of a fit at the chosen k | " if extra else "")
             + "NMI at true k | CPU s auto / true k |",
             "|---|---:|---:|---:|---|---|---:|" + ("---:|" if extra else "") + "---:|---:|"]
    for r in rows:
        mark = "" if near(r["chosen"], r["k"]) else " ✗"
        fitted = f"{r['nmi_at_chosen']:.3f} | " if extra else ""
        lines.append(f"| {r['name']} | {r['n']} | {r['k']} | {r['chosen']}{mark} | {r['top']} | "
                     f"2..{r['k_max']} | {r['nmi_auto']:.3f} | {fitted}{r['nmi_true']:.3f} | "
                     f"{r['auto_s']:.1f} / {r['true_s']:.1f} = "
                     f"{r['auto_s'] / r['true_s']:.2f} |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    hits = sum(near(r["chosen"], r["k"]) for r in rows)
    auto, true = np.mean([r["nmi_auto"] for r in rows]), np.mean([r["nmi_true"] for r in rows])
    ratios = [r["auto_s"] / r["true_s"] for r in rows]
    total = sum(r["auto_s"] for r in rows) / sum(r["true_s"] for r in rows)
    fitted = ""
    if rows and "nmi_at_chosen" in rows[0]:
        at = np.mean([r["nmi_at_chosen"] for r in rows])
        fitted = f"* mean NMI of a fit at the chosen k {at:.3f} (ratio {at / true:.3f})\n"
    return (f"* k within max(1, k/5): {hits} of {len(rows)} ({hits / len(rows):.0%}); exact in "
            f"{sum(r['chosen'] == r['k'] for r in rows)}\n"
            f"* mean NMI at the chosen k {auto:.3f}, at the true k {true:.3f} "
            f"(ratio {auto / true:.3f})\n" + fitted +
            f"* CPU seconds auto / true k: median {np.median(ratios):.2f}, max "
            f"{max(ratios):.2f}, all sets together {total:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("design", "confirmation", "fresh", "both"),
                        default="both")
    parser.add_argument("--sets", help="comma-separated set names instead of a part")
    parser.add_argument("--mode", choices=("best", "paper"), default="best")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--at-chosen", action="store_true",
                        help="also fit at the chosen k (module docstring)")
    args = parser.parse_args(argv)
    chosen = parts()
    if args.sets:
        chosen = {"chosen sets": args.sets.split(",")}
    elif args.part != "both":
        chosen = {args.part: chosen[args.part]}
    else:
        chosen.pop("fresh")
    for part, names in chosen.items():
        if any(not n.startswith("gen:") for n in names) and not DATASETS.is_dir():
            print(f"no datasets at {DATASETS}", file=sys.stderr)
            return 1
        rows = [run_set(name, args.mode, args.seed, args.at_chosen) for name in names]
        print(f"### {part} (mode {args.mode}, seed {args.seed})\n")
        print(format_table(rows))
        print()
        print(summary(rows))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
