"""How many unchanged samples keep their cluster id, through the command line, on Hdigit.

Hdigit (N = 10,000, 2 views, k = 10) is shuffled (``--seed``); the first 9,000 samples are
clustered (``fastmice cluster``), the other 1,000 appended, then:

* ``recluster --from-scratch`` (new base clusterings and consensus over the 10,000);
* ``extend RUN --groups 10`` of the first run (30 groups, a new consensus).

For each, the fraction of the 9,000 first samples whose label equals their label in the
first run: as the run gave it (its ids matched to the parent run's, ``relabel`` in its
record) and as its consensus numbered them (what the ids were before they were matched).

Usage: python benchmarks/id_stability.py [--seed 0] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from pipeline_hdigit import HDIGIT, fastmice_cli, labels_of  # also puts the repository on the path

from pipeline.keys import RUN
from storage import open_store


def _raw(store_dir: Path, run_id: str) -> np.ndarray:
    """The run's consensus labels, as numbered before matching."""
    store = open_store(store_dir)
    return np.asarray(store.get(store.read_record(RUN, run_id)["consensus"])["labels"])


def _report(name: str, summary: dict, wall: float, first: np.ndarray, store_dir: Path) -> None:
    n = first.size
    kept = float(np.mean(labels_of(summary)[:n] == first))
    raw = float(np.mean(_raw(store_dir, summary["run_id"])[:n] == first))
    print(f"{name:<28} | kept {100 * kept:5.1f}% of {n} | consensus ids {100 * raw:5.1f}% | "
          f"NMI {summary['scores']['nmi']:.4f} | wall {wall:5.1f} s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0, help="shuffle of Hdigit's rows")
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="fastmice-ids-"))
    with np.load(HDIGIT) as data:
        views = [data[f"view{v}"] for v in range(2)]
        y = data["labels"]
    order = np.random.default_rng(args.seed).permutation(y.size)
    views, y = [X[order] for X in views], y[order]
    for name, rows in (("old", slice(0, 9000)), ("new", slice(9000, None))):
        np.savez(work / f"{name}.npz", view0=views[0][rows], view1=views[1][rows],
                 labels=y[rows])
    store = work / "store"
    first, wall = fastmice_cli("cluster", work / "old.npz", "--name", "hd", "--store", store)
    print(f"{'cluster (9,000)':<28} | run {first['run_id']} | wall {wall:5.1f} s")
    old = labels_of(first)
    fastmice_cli("append", "hd", work / "new.npz", "--store", store)
    summary, wall = fastmice_cli("recluster", "hd", "--from-scratch", "--store", store)
    _report("recluster --from-scratch", summary, wall, old, store)
    summary, wall = fastmice_cli("extend", first["run_id"], "--groups", "10", "--store", store)
    _report("extend --groups 10", summary, wall, old, store)
    print(f"work dir {work}")


if __name__ == "__main__":
    main()
