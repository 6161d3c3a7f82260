"""Quality and time at scale on the shapes of benchmarks/shapes.py, each fit in a new process.

For each setting of benchmarks/sampling.py (``default``, ``old-default`` = CODE_VERSION 9's
sample sizes, ``exact`` = every step on every sample), ``FastMICE(k, random_state=SEED,
n_jobs=-1).fit`` on views read into memory: fit seconds, seconds per stage
(thread-seconds), peak RSS and NMI. With ``--pipeline``, also ``fastmice cluster DIR --k K``
(the default settings) in a new store. Settings alternate in one run, so that their ratio
is measured under the same load.

    python benchmarks/scale_quality.py partial 398191 400 --settings old-default,default --pipeline
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import run_measured, work_folder
from scale import _env, cli
from shapes import SHAPES, write_shape_dir


def _fit(folder: str, k: str, setting: str, seed: str) -> None:
    from sampling import SETTINGS, constants

    import fastmice
    from fastmice.metrics import clustering_scores

    paths = sorted(Path(folder).glob("view*.npy"), key=lambda p: int(p.stem[4:]))
    Xs, y = [np.load(p) for p in paths], np.load(Path(folder) / "labels.npy")
    started = time.perf_counter()
    with constants(SETTINGS[setting]), fastmice.record_stages() as stages:
        labels = fastmice.FastMICE(int(k), random_state=int(seed), n_jobs=-1).fit(Xs).labels_
    seconds = time.perf_counter() - started
    print(json.dumps({"fit": round(seconds, 1),
                      "stages": {s: round(t, 1) for s, t in stages.items()},
                      "nmi": round(clustering_scores(y, labels)["nmi"], 4)}))


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_fit":
        _fit(*argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("shape", choices=SHAPES)
    parser.add_argument("n_samples", type=int)
    parser.add_argument("n_clusters", type=int)
    parser.add_argument("--settings", default="old-default,default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pipeline", action="store_true")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, "
                        "the pipeline's store)")
    args = parser.parse_args(argv)
    folder, _ = write_shape_dir(args.data_dir / f"{args.shape}-{args.n_samples}-k"
                                f"{args.n_clusters}", args.shape, args.n_samples,
                                args.n_clusters)
    with work_folder("scale-quality-", args.keep) as work:
        _measure(work, folder, args)


def _measure(work: Path, folder: Path, args: argparse.Namespace) -> None:
    """Each setting's fit (and the pipeline's command) on ``folder``, logs in ``work``."""
    for setting in args.settings.split(","):
        m = run_measured(f"fit-{setting}", [sys.executable, __file__, "_fit", str(folder),
                                            str(args.n_clusters), setting, str(args.seed)],
                         _env(work), work, timeout=7200)
        print(json.dumps({"shape": args.shape, "n": args.n_samples, "k": args.n_clusters,
                          "seed": args.seed, "setting": setting, **(m.output or {}),
                          "wall": round(m.seconds, 1),
                          "peak_rss_gb": round(m.peak_rss_mb / 1024, 2)}), flush=True)
    if args.pipeline:
        out = cli(work, "pipeline", "cluster", folder, "--k", args.n_clusters,
                  "--random-state", args.seed)
        print(json.dumps({"shape": args.shape, "n": args.n_samples, "setting": "pipeline",
                          "wall": out["wall"], "peak_rss_gb": out["peak_rss_gb"],
                          "stages": out.get("stages"), "scores": out.get("scores"),
                          "exit": out.get("exit")}), flush=True)


if __name__ == "__main__":
    main()
