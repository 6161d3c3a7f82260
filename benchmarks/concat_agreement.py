"""Would the members' agreement pick k-means on the concatenation where it is ahead? (issue 32)

For every point of a part of the generated family (at most ``--max-samples`` samples) and
seed: the best mode's fit (``FastMICE(k, metric="auto", mode="best", n_jobs=2)``), scikit-learn
``KMeans(k, n_init=10)`` on the views side by side as they are (``family_sweep.py``'s
``concat-kmeans``), the NMI of each, and the weighted agreement of each with the best
mode's members (``fastmice._best.weighted_agreement``, the members' own weights: the rule
that keeps the best mode's joint candidate). Prints one JSON line per fit, then the points
where either is more than a point ahead and how often the concatenation agrees better.

Usage, from the repository root::

    python benchmarks/concat_agreement.py --part design --seeds 0,1
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from families import LARGE, make_point
from family_sweep import PARTS, SLACK, concatenate

from fastmice import FastMICE
from fastmice._best import weighted_agreement
from fastmice.metrics import clustering_scores


def one_fit(Xs: list, y: np.ndarray, seed: int) -> dict:
    """The best mode's and the concatenation's NMI and agreement with the members."""
    from sklearn.cluster import KMeans

    k = len(np.unique(y))
    model = FastMICE(k, metric="auto", mode="best", random_state=seed, n_jobs=2).fit(Xs)
    consensus = model.consensus_
    members = model.base_labels_ if consensus.joint is None else \
        np.hstack([model.base_labels_, consensus.joint.member_labels_])
    weights = consensus.member_weights
    concat = KMeans(k, n_init=10, random_state=seed).fit_predict(concatenate(Xs))
    return {"source": consensus.source,
            "nmi_best": clustering_scores(y, model.labels_)["nmi"],
            "nmi_concat": clustering_scores(y, concat)["nmi"],
            "agreement_best": weighted_agreement(model.labels_, members, weights, 2),
            "agreement_concat": weighted_agreement(concat, members, weights, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="design", choices=sorted(PARTS))
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--max-samples", type=int, default=LARGE)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    fits: dict[str, list[dict]] = {}
    for point in PARTS[args.part]:
        if point.n_samples > args.max_samples:
            continue
        Xs, y = make_point(point)
        for seed in seeds:
            row = one_fit(Xs, y, seed)
            fits.setdefault(point.name, []).append(row)
            print(json.dumps({"point": point.name, "seed": seed,
                              **{key: round(v, 4) if isinstance(v, float) else v
                                 for key, v in row.items()}}), flush=True)
    print("\n| point | best NMI | concatenation NMI | its agreement minus the best mode's |")
    print("|---|---:|---:|---:|")
    for name, rows in fits.items():
        best, concat = (np.mean([r[key] for r in rows]) for key in ("nmi_best", "nmi_concat"))
        if abs(concat - best) > SLACK:
            lead = np.mean([r["agreement_concat"] - r["agreement_best"] for r in rows])
            print(f"| {name} | {best:.3f} | {concat:.3f} | {lead:+.4f} |")
    every = [r for rows in fits.values() for r in rows]
    picked = [r for r in every if r["agreement_concat"] > r["agreement_best"]]
    print(f"\nmean NMI: best {np.mean([r['nmi_best'] for r in every]):.3f}, concatenation "
          f"{np.mean([r['nmi_concat'] for r in every]):.3f}; the concatenation agrees better "
          f"in {len(picked)} of {len(every)} fits (NMI change there "
          f"{sum(r['nmi_concat'] - r['nmi_best'] for r in picked):+.3f} in all)")


if __name__ == "__main__":
    main()
