"""The 13 Python peers' NMI on the shared datasets (``../shared/reference/peers.md``) and
fastmice's rank among them.

A rank is 1 + the number of peers whose NMI is strictly above ours; a peer that did not run
on a data set (a dash) ranks below everyone there.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

PEERS_TABLE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "peers.md"


def load_peers(path: Path = PEERS_TABLE) -> dict[str, dict[str, float]]:
    """``{dataset (lower case): {peer: nmi}}``; empty if the file is absent."""
    if not path.is_file():
        return {}
    lines = [line.strip() for line in path.read_text().splitlines()]
    for i, line in enumerate(lines[:-1]):
        if line.startswith("| dataset") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1]):
            header = [c.strip() for c in line.strip("|").split("|")]
            table = {}
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                cells = [c.strip() for c in row.strip("|").split("|")]
                scores = {}
                for name, cell in zip(header[2:], cells[2:], strict=False):
                    try:
                        scores[name] = float(cell)
                    except ValueError:
                        continue
                table[cells[0].lower()] = scores
            return table
    return {}


def rank_among_peers(nmi: float, peers: dict[str, float]) -> int:
    """1 + the number of peers strictly above ``nmi``."""
    return 1 + sum(score > nmi for score in peers.values())


def best_peer(peers: dict[str, float]) -> tuple[str, float]:
    """The peer with the highest NMI and its score."""
    name = max(peers, key=peers.get)
    return name, peers[name]


def rank_summary(means: dict[str, float], table: dict[str, dict[str, float]]) -> dict:
    """Mean rank and the number of data sets where we rank first, over those in ``table``."""
    ranks = {name: rank_among_peers(nmi, table[name.lower()])
             for name, nmi in means.items() if name.lower() in table}
    return {"ranks": ranks, "mean_rank": float(np.mean(list(ranks.values()))) if ranks else None,
            "first": sum(r == 1 for r in ranks.values()), "n": len(ranks)}


def format_peer_table(rows: list[dict], table: dict[str, dict[str, float]]) -> str:
    """Our NMI per data set beside the best peer's, with our rank among the 14 methods.

    ``rows`` are :mod:`benchmarks.quality` rows; per data set the row of the metric the
    data set's INDEX.md entry names (or ``auto``) is ranked.
    """
    lines = ["| dataset | metric | NMI | best peer | peer NMI | rank of 14 |",
             "|---|---|---|---|---|---|"]
    means = {}
    for r in rows:
        name = r["dataset"]
        if "error" in r or name.lower() not in table or not r.get("ranked"):
            continue
        peers = table[name.lower()]
        peer, score = best_peer(peers)
        means[name] = r["nmi_mean"]
        lines.append(f"| {name} | {r['metric']} | {r['nmi_mean']:.3f} ± {r['nmi_std']:.3f} | "
                     f"{peer} | {score:.3f} | {rank_among_peers(r['nmi_mean'], peers)} |")
    summary = rank_summary(means, table)
    if summary["n"]:
        lines.append(f"\nmean rank {summary['mean_rank']:.2f} over {summary['n']} data sets; "
                     f"first on {summary['first']}")
    return "\n".join(lines)
