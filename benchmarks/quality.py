"""Quality benchmark: FastMICE on the shared datasets next to the official code's results.

Every dataset in ``../shared/datasets`` is clustered with every metric for which
``../shared/reference/official-octave.md`` has a row, plus the metric ``INDEX.md`` gives
it, once per seed, with ``FastMICE(n_clusters=k, metric=..., random_state=seed)``. The
script prints a markdown table (NMI, ARI, ACC and purity as mean ± std over the seeds,
seconds per run) beside the official NMI and seconds, then the verdict lines of the
quality bar:

(a) the average over the rows of our mean NMI against the average official mean NMI;
(b) rows whose mean NMI is below the official mean by more than 2 * max(our std,
    official std);
(c) Movies and Citeseer with cosine against the paper's FastMICE NMI minus one std.

Standard deviations use ``ddof=1`` (MATLAB's ``std``). NMI is max-normalised, as in the
paper and the official table. ``--json`` prints one JSON object instead of the table.
Progress goes to stderr.

Usage, from the repository root::

    python benchmarks/quality.py                       # all datasets, 10 seeds
    python benchmarks/quality.py --datasets MSRCv1,3Sources --seeds 2
    python benchmarks/quality.py --metrics cosine --n-jobs 2 --json > quality.json
    python benchmarks/quality.py --mode best --seeds 10 --n-jobs 2   # metric "auto"

Below the table, the NMI of each data set (its INDEX.md metric, or ``auto``) beside the best
of the 13 Python peers of ``../shared/reference/peers.md`` and our rank among the 14.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
OFFICIAL_TABLE = SHARED / "reference" / "official-octave.md"
INDEX_TABLE = SHARED / "datasets" / "INDEX.md"

if str(REPO) not in sys.path:  # a checkout that is not installed: use it in place
    sys.path.insert(0, str(REPO))

import fastmice  # noqa: E402
from benchmarks._peers_table import format_peer_table, load_peers  # noqa: E402
from pipeline.ingest import available_datasets, load_dataset  # noqa: E402

SCORES = ("nmi", "ari", "acc", "purity")
# Official table column for each score.
OFFICIAL_COLUMNS = {"nmi": "NMI", "ari": "ARI", "acc": "ACC", "purity": "PUR"}

# FastMICE NMI (mean, std) in percent, with cosine distance, from the paper's Table III
# ("Average NMI(%) scores over 20 runs", \label{table:compare_nmi} in
# ../shared/paper/fastmice-paper.tex): Movies 28.59 ± 1.33, Citeseer 31.71 ± 2.03.
PAPER_NMI_PERCENT = {"Movies": (28.59, 1.33), "Citeseer": (31.71, 2.03)}
PAPER_METRIC = "cosine"


# ---------------------------------------------------------------------------- reference tables


def parse_markdown_table(text: str) -> list[dict[str, str]]:
    """Rows of the first markdown table in ``text``, as dicts keyed by the header cells."""
    lines = [line.strip() for line in text.splitlines()]
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1]):
            header = [cell.strip() for cell in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                cells = [cell.strip() for cell in row.strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=False)))
            return rows
    return []


def parse_mean_std(cell: str) -> tuple[float, float]:
    """``"0.9336 ± 0.0102"`` -> ``(0.9336, 0.0102)``."""
    mean, _, std = cell.partition("±")
    return float(mean), float(std or 0.0)


def load_official(path: Path) -> dict[tuple[str, str], dict]:
    """The official results keyed by (lower-case dataset name, metric); empty if absent.

    Dataset names are matched case-insensitively: the official "CiteSeer" (euclidean,
    from the original .mat) is the same data as ``Citeseer.npz``.
    """
    if not path.is_file():
        return {}
    official = {}
    for row in parse_markdown_table(path.read_text()):
        try:
            entry = {"dataset": row["dataset"], "metric": row["metric"], "runs": int(row["runs"])}
            for score, column in OFFICIAL_COLUMNS.items():
                entry[f"{score}_mean"], entry[f"{score}_std"] = parse_mean_std(row[column])
            wall = next(v for k, v in row.items() if k.lower().startswith("wall"))
            entry["seconds"] = float(wall)
        except (KeyError, ValueError, StopIteration) as exc:
            print(f"warning: skipping official row {row}: {exc!r}", file=sys.stderr)
            continue
        official[(entry["dataset"].lower(), entry["metric"])] = entry
    return official


def load_index_metrics(path: Path) -> dict[str, str]:
    """The metric INDEX.md gives each dataset, keyed by lower-case name; empty if absent."""
    if not path.is_file():
        return {}
    return {
        row["name"].lower(): row["metric"]
        for row in parse_markdown_table(path.read_text())
        if row.get("name") and row.get("metric")
    }


# ---------------------------------------------------------------------------- running


def plan_rows(
    datasets: list[str],
    official: dict[tuple[str, str], dict],
    index_metrics: dict[str, str],
    metrics_filter: list[str] | None,
    mode: str = "paper",
) -> list[tuple[str, str]]:
    """(dataset, metric) pairs: every official metric of a dataset plus its INDEX metric
    (the best mode: ``auto``, its own default, alone)."""
    rows = []
    for name in datasets:
        metrics = {m for (d, m) in official if d == name.lower()} if mode == "paper" else set()
        metrics.add(index_metrics.get(name.lower(), "euclidean") if mode == "paper" else "auto")
        rows += [(name, m) for m in sorted(metrics) if not metrics_filter or m in metrics_filter]
    return rows


def _mean_std(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def run_row(
    name: str, metric: str, seeds: list[int], n_jobs: int | None, root: Path, progress: str,
    mode: str = "paper",
) -> dict:
    """Cluster one dataset with one metric once per seed; return the row of results."""
    Xs, y = load_dataset(name, root)
    k = int(np.unique(y).size)
    row = {
        "dataset": name,
        "metric": metric,
        "n_samples": int(y.shape[0]),
        "n_views": len(Xs),
        "n_clusters": k,
        "seeds": seeds,
        "runs": [],
    }
    for seed in seeds:
        model = fastmice.FastMICE(n_clusters=k, metric=metric, random_state=seed, n_jobs=n_jobs,
                                  mode=mode)
        start = time.perf_counter()
        labels = model.fit_predict(Xs)
        seconds = time.perf_counter() - start
        scores = fastmice.metrics.clustering_scores(y, labels)
        row["runs"].append({"seed": seed, "seconds": seconds, **scores})
        print(
            f"{progress} {name} {metric} seed {seed}: NMI {scores['nmi']:.4f} ({seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    for score in (*SCORES, "seconds"):
        row[f"{score}_mean"], row[f"{score}_std"] = _mean_std([r[score] for r in row["runs"]])
    return row


def attach_official(row: dict, official: dict[tuple[str, str], dict]) -> None:
    ref = official.get((row["dataset"].lower(), row["metric"]))
    row["official"] = ref
    row["delta_nmi"] = None if ref is None else row["nmi_mean"] - ref["nmi_mean"]


# ---------------------------------------------------------------------------- verdict


def verdict(rows: list[dict]) -> dict:
    """The three verdict lines of the quality bar, as data."""
    done = [r for r in rows if "error" not in r]
    compared = [r for r in done if r["official"] is not None]
    out: dict = {"n_rows_compared": len(compared)}
    if compared:
        ours = float(np.mean([r["nmi_mean"] for r in compared]))
        theirs = float(np.mean([r["official"]["nmi_mean"] for r in compared]))
        out["average"] = {"ours": ours, "official": theirs, "delta": ours - theirs}
    else:
        out["average"] = None
    below = []
    for r in compared:
        ref = r["official"]
        margin = 2 * max(r["nmi_std"], ref["nmi_std"])
        if r["nmi_mean"] < ref["nmi_mean"] - margin:
            below.append(
                {
                    "dataset": r["dataset"],
                    "metric": r["metric"],
                    "ours": r["nmi_mean"],
                    "official": ref["nmi_mean"],
                    "margin": margin,
                }
            )
    out["below_official"] = below
    paper = {}
    for name, (mean, std) in PAPER_NMI_PERCENT.items():
        threshold = round((mean - std) / 100, 6)
        match = [
            r for r in done if r["dataset"].lower() == name.lower() and r["metric"] == PAPER_METRIC
        ]
        ours = match[0]["nmi_mean"] if match else None
        paper[name] = {
            "paper_mean": round(mean / 100, 6),
            "paper_std": round(std / 100, 6),
            "threshold": round(threshold, 6),
            "ours": ours,
            "pass": None if ours is None else ours >= threshold,
        }
    out["paper"] = paper
    out["errors"] = [
        {"dataset": r["dataset"], "metric": r["metric"], "error": r["error"]}
        for r in rows
        if "error" in r
    ]
    return out


def _pm(mean: float, std: float) -> str:
    return f"{mean:.4f} ± {std:.4f}"


def format_table(rows: list[dict]) -> str:
    header = (
        "| dataset | metric | N | V | k | runs | NMI | ARI | ACC | PUR | s/run "
        "| official NMI | official s/run | ΔNMI |"
    )
    lines = [header, "|" + "---|" * 14]
    for r in rows:
        if "error" in r:
            error = r["error"].replace("|", "/").replace("\n", " ")
            lines.append(
                f"| {r['dataset']} | {r['metric']} | - | - | - | 0 | error: {error} |" + " |" * 7
            )
            continue
        lead = f"| {r['dataset']} | {r['metric']} | {r['n_samples']} | {r['n_views']} | "
        ref = r["official"]
        cells = [
            str(r["n_clusters"]),
            str(len(r["runs"])),
            *(_pm(r[f"{s}_mean"], r[f"{s}_std"]) for s in SCORES),
            f"{r['seconds_mean']:.2f}",
            _pm(ref["nmi_mean"], ref["nmi_std"]) if ref else "-",
            f"{ref['seconds']:.1f}" if ref else "-",
            f"{r['delta_nmi']:+.4f}" if ref else "-",
        ]
        lines.append(lead + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_verdict(result: dict) -> str:
    lines = []
    avg = result["average"]
    if avg is None:
        lines.append("(a) no row has an official result to compare with.")
    else:
        status = "not below" if avg["delta"] >= 0 else "BELOW"
        lines.append(
            f"(a) average mean NMI over {result['n_rows_compared']} rows with an official "
            f"result: ours {avg['ours']:.4f} vs official {avg['official']:.4f} "
            f"(delta {avg['delta']:+.4f}): {status} the official average."
        )
    below = result["below_official"]
    if below:
        listing = "; ".join(
            f"{b['dataset']} {b['metric']} {b['ours']:.4f} < {b['official']:.4f}"
            f" - {b['margin']:.4f}"
            for b in below
        )
        lines.append(f"(b) rows below the official mean by more than 2*max(std): {listing}")
    else:
        lines.append("(b) rows below the official mean by more than 2*max(std): none")
    parts = []
    for name, p in result["paper"].items():
        target = (
            f"paper {100 * p['paper_mean']:.2f}-{100 * p['paper_std']:.2f} = {p['threshold']:.4f}"
        )
        if p["ours"] is None:
            parts.append(f"{name} ({PAPER_METRIC}): not run ({target})")
        else:
            status = "PASS" if p["pass"] else "FAIL"
            parts.append(f"{name} ({PAPER_METRIC}): ours {p['ours']:.4f} vs {target}: {status}")
    lines.append("(c) " + "; ".join(parts))
    for e in result["errors"]:
        lines.append(f"error: {e['dataset']} {e['metric']}: {e['error']}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- command line


def _split(value: str | None) -> list[str] | None:
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def _chosen_datasets(parser: argparse.ArgumentParser, root: Path,
                     wanted: list[str] | None) -> list[str]:
    """The datasets of ``root`` named in ``wanted`` (case-insensitive), or all of them."""
    available = available_datasets(root)
    if not available:
        parser.error(f"no datasets found in {root}; pass --root")
    if not wanted:
        return available
    by_lower = {n.lower(): n for n in available}
    unknown = [w for w in wanted if w.lower() not in by_lower]
    if unknown:
        parser.error(f"unknown datasets {unknown}; available: {', '.join(available)}")
    return [by_lower[w.lower()] for w in wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="runs per row (seeds 0..N-1)")
    parser.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--datasets", help="comma-separated dataset names (default: all)")
    parser.add_argument("--metrics", help="comma-separated metrics, e.g. cosine (default: all)")
    parser.add_argument("--n-jobs", type=int, default=None, help="FastMICE(n_jobs=...)")
    parser.add_argument("--root", type=Path, default=SHARED / "datasets",
                        help="datasets folder (default: ../shared/datasets)")
    parser.add_argument("--official", type=Path, default=OFFICIAL_TABLE, help="official table")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--mode", choices=("paper", "best"), default="paper")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds={args.seeds} must be >= 1")

    names = _chosen_datasets(parser, args.root, _split(args.datasets))
    official = load_official(args.official)
    if not official:
        print(f"note: no official table at {args.official}; comparing nothing", file=sys.stderr)
    index_metrics = load_index_metrics(INDEX_TABLE)
    plan = plan_rows(names, official, index_metrics, _split(args.metrics), args.mode)
    if not plan:
        parser.error("no (dataset, metric) rows left after the filters")
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))

    rows = []
    for i, (name, metric) in enumerate(plan, start=1):
        try:
            row = run_row(name, metric, seeds, args.n_jobs, args.root, f"[{i}/{len(plan)}]",
                          args.mode)
            row["ranked"] = metric in ("auto", index_metrics.get(name.lower(), "euclidean"))
        except Exception as exc:  # keep benchmarking the other rows; report at the end
            row = {"dataset": name, "metric": metric, "error": f"{type(exc).__name__}: {exc}"}
            print(f"[{i}/{len(plan)}] {name} {metric}: {row['error']}", file=sys.stderr)
        else:
            attach_official(row, official)
        rows.append(row)

    result = verdict(rows)
    if args.json:
        payload = {
            "fastmice_version": fastmice.__version__,
            "code_version": getattr(fastmice, "CODE_VERSION", None),
            "seeds": seeds,
            "n_jobs": args.n_jobs,
            "rows": rows,
            "verdict": result,
        }
        print(json.dumps(payload, indent=1, default=_json_default, allow_nan=False))
    else:
        print(format_table(rows))
        print()
        print(format_verdict(result))
        print()
        print(format_peer_table(rows, load_peers()))
    return 1 if any("error" in r for r in rows) else 0


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


if __name__ == "__main__":
    sys.exit(main())
