"""Rules that choose between the best mode's two candidates, measured offline.

``capture`` fits the best mode once per data set and seed (the design or confirmation half
of the shared sets and the generated family's points of at most 5,000 samples) and keeps,
in a cache folder, the two candidates it chooses between (the consensus cut and the joint
k-means, :mod:`fastmice._joint_consensus`), the base clusterings and their weights, the joint
space and the truth. ``rules`` then scores each rule on the cache: the NMI of the candidate
it picks, per data set (mean over the seeds), against k-means on the concatenated views and
the paper mode (their NMI per family point from the family sweep's JSON).

The rules (``RULES``): ``agreement`` (the weighted NMI with the base clusterings, the
candidate's rule before the noise check), ``noise`` (``agreement``, or the consensus explains
less of the joint space than k-means explains of it with its columns shuffled while the
candidate explains more: ``BestChoices.joint_null``), ``noise+tie<t`` (``noise``, or the
candidate's agreement less than ``t`` below the consensus's: ``BestChoices.joint_tie``),
``gap<t`` (``agreement``, or the
consensus's excess over that null below ``t`` times the candidate's), ``variance``,
``silhouette`` (the higher in the joint space), ``view_kmeans`` (the higher mean NMI with
k-means on each view alone), ``joint`` (always) and ``oracle`` (the better by the truth).

Usage, from the repository root::

    python benchmarks/joint_rules.py capture design --cache /tmp/joint-cache --seeds 0,1
    python benchmarks/joint_rules.py rules design --cache /tmp/joint-cache \\
        --family-json design.json [--per-set]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from best_ablation import CONFIRMATION_SETS, DESIGN_SETS, SHARED
from families import PARTS, make_point

import fastmice
from fastmice import _best
from fastmice import _joint_consensus as joint_consensus
from fastmice._joint import fit_joint_space

SHARED_PARTS = {"design": DESIGN_SETS, "confirmation": CONFIRMATION_SETS}
MAX_SAMPLES = 5000


def _nmi(a, b) -> float:
    from sklearn.metrics import normalized_mutual_info_score

    return float(normalized_mutual_info_score(a, b, average_method="max"))


def cases(part: str):
    """(name, views, truth, k) of the part's shared sets and small family points."""
    from pipeline.ingest import load_dataset

    for name in SHARED_PARTS[part]:
        Xs, y = load_dataset(name, SHARED)
        yield name, Xs, y, int(np.unique(y).size)
    for p in PARTS[part]:
        if p.n_samples <= MAX_SAMPLES:
            Xs, y = make_point(p)
            yield p.name, Xs, y, p.n_clusters


def capture(part: str, cache: Path, seeds: list[int]) -> None:
    """Fit the best mode per case and seed; keep what the candidates' choice saw."""
    cache.mkdir(parents=True, exist_ok=True)
    seen = {}
    original = joint_consensus.agreements

    def recording(consensus, joint, base, weights, *args):
        seen.update(cons=consensus.copy(), joint=joint.copy(), base=base.copy(),
                    w=np.asarray(weights).copy())
        return original(consensus, joint, base, weights, *args)

    joint_consensus.agreements = recording
    try:
        for name, Xs, y, k in cases(part):
            for seed in seeds:
                path = cache / f"{name}__s{seed}.npz"
                if path.exists():
                    continue
                seen.clear()
                model = fastmice.FastMICE(k, metric="auto", mode="best", random_state=seed,
                                          n_jobs=2).fit(Xs)
                if not seen:
                    print(f"{name} seed {seed}: no choice made", file=sys.stderr)
                    continue
                Z = fit_joint_space(Xs, model.metrics_).transform(Xs, slice(None))
                Z = {"Z": Z} if not sp.issparse(Z) else {
                    "Zdata": Z.data, "Zind": Z.indices, "Zptr": Z.indptr,
                    "Zshape": np.array(Z.shape)}
                np.savez_compressed(path, y=y, k=k, widths=[X.shape[1] for X in Xs], **seen,
                                    **Z)
                print(f"{name} seed {seed}: consensus {_nmi(y, seen['cons']):.3f}, joint "
                      f"{_nmi(y, seen['joint']):.3f}", file=sys.stderr, flush=True)
    finally:
        joint_consensus.agreements = original


def features(path: Path) -> dict:
    """What the rules read, for one cached case."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    d = dict(np.load(path))
    Z = d["Z"] if "Z" in d else sp.csr_matrix((d["Zdata"], d["Zind"], d["Zptr"]),
                                              shape=tuple(d["Zshape"]))
    y, c, j, k = d["y"], d["cons"], d["joint"], int(d["k"])
    f = {"nmi_c": _nmi(y, c), "nmi_j": _nmi(y, j),
         "wa_c": _best.weighted_agreement(c, d["base"], d["w"]),
         "wa_j": _best.weighted_agreement(j, d["base"], d["w"]),
         "R_c": joint_consensus.explained_share(Z, c),
         "R_j": joint_consensus.explained_share(Z, j)}
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(len(y), min(len(y), 2000), replace=False))
    sample = Z[rows].toarray() if sp.issparse(Z) else Z[rows]
    shuffled = rng.permuted(sample, axis=0)  # every column on its own: no clusters left
    f["R_null"] = joint_consensus.explained_share(
        shuffled, KMeans(k, n_init=1, random_state=0).fit_predict(shuffled))
    for key, labels in (("c", c), ("j", j)):
        f["sil_" + key] = float(silhouette_score(sample, labels[rows])) \
            if len(np.unique(labels[rows])) > 1 else -1.0
    edges = np.concatenate([[0], np.cumsum(d["widths"])])
    views = [KMeans(k, n_init=1, random_state=0).fit_predict(Z[:, a:b])
             for a, b in itertools.pairwise(edges)]
    f["view_c"] = float(np.mean([_nmi(c, v) for v in views]))
    f["view_j"] = float(np.mean([_nmi(j, v) for v in views]))
    return f


def _gap(f: dict) -> float:
    return (f["R_c"] - f["R_null"]) / max(f["R_j"] - f["R_null"], 1e-12)


RULES = {
    "agreement": lambda f: f["wa_j"] > f["wa_c"],
    "noise": lambda f: f["wa_j"] > f["wa_c"] or f["R_c"] < f["R_null"] < f["R_j"],
    **{f"noise+tie<{t}": (lambda f, t=t: f["wa_j"] > f["wa_c"] - t
                          or f["R_c"] < f["R_null"] < f["R_j"])
       for t in (0.003, 0.005, 0.008, 0.01, 0.012, 0.015, 0.02)},
    "gap<0.25": lambda f: f["wa_j"] > f["wa_c"] or _gap(f) < 0.25,
    "gap<0.5": lambda f: f["wa_j"] > f["wa_c"] or _gap(f) < 0.5,
    "variance": lambda f: f["R_j"] > f["R_c"],
    "silhouette": lambda f: f["sil_j"] > f["sil_c"],
    "view_kmeans": lambda f: f["view_j"] > f["view_c"],
    "joint": lambda f: True,
    "oracle": lambda f: f["nmi_j"] > f["nmi_c"],
}


def rules(part: str, cache: Path, family_json: Path, per_set: bool) -> str:
    table = cache / f"features-{part}.json"
    found = json.loads(table.read_text()) if table.exists() else {}
    names = set(SHARED_PARTS[part]) | {p.name for p in PARTS[part]}
    for path in sorted(cache.glob("*.npz")):
        if path.stem not in found and path.stem.split("__")[0] in names:
            found[path.stem] = features(path)
            table.write_text(json.dumps(found))
    reference: dict = {}
    for r in json.loads(family_json.read_text())["rows"]:
        reference.setdefault(r["point"], {}).setdefault(r["method"], []).append(r["nmi"])
    by_case: dict = {}
    for stem, f in found.items():
        by_case.setdefault(stem.split("__")[0], []).append(f)
    shared = [n for n in by_case if n in SHARED_PARTS[part]]
    family = [n for n in by_case if n in reference]
    lines = ["| rule | shared sets: mean NMI | family: mean NMI | > 1 pt below concat-kmeans "
             "| > 1 pt below paper |", "|---|---|---|---|---|"]
    picked = {}
    for rule_name, rule in RULES.items():
        picked[rule_name] = {n: float(np.mean([f["nmi_j"] if rule(f) else f["nmi_c"]
                                               for f in fs])) for n, fs in by_case.items()}
        below = {m: sum(picked[rule_name][n] < np.mean(reference[n][m]) - 0.01
                        for n in family) for m in ("concat-kmeans", "paper")}
        lines.append(f"| {rule_name} | {np.mean([picked[rule_name][n] for n in shared]):.4f} "
                     f"| {np.mean([picked[rule_name][n] for n in family]):.4f} | "
                     f"{below['concat-kmeans']} of {len(family)} | {below['paper']} |")
    if per_set:
        lines += ["", "| case | " + " | ".join(RULES) + " |", "|---|" + "---|" * len(RULES)]
        for n in sorted(by_case, key=str.lower):
            lines.append(f"| {n} | " + " | ".join(f"{picked[r][n]:.3f}" for r in RULES) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("capture", "rules"))
    parser.add_argument("part", choices=("design", "confirmation"))
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--family-json", type=Path,
                        help="the family sweep's JSON of this part (concat-kmeans, paper)")
    parser.add_argument("--per-set", action="store_true")
    args = parser.parse_args(argv)
    if args.action == "capture":
        capture(args.part, args.cache, [int(s) for s in args.seeds.split(",")])
    else:
        print(rules(args.part, args.cache, args.family_json, args.per_set))
    return 0


if __name__ == "__main__":
    sys.exit(main())
