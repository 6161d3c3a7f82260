"""A command whose every step is stored answers from the store, without Prefect, unless a
Prefect server is set (then the flow runs, so that the run shows in its UI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pipeline.ingest import save_views_dir
from pipeline.runs import list_runs, read_run
from storage import open_store

pytestmark = [pytest.mark.flows, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NO_PREFECT = """
import sys
from cli.main import main
status = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("prefect", "tasks", "flows"))
assert not loaded, loaded
sys.exit(status)
"""


def _run(argv: list[str], api_url: str | None, script: str | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in ("PREFECT_API_URL", "FASTMICE_STORE", "FASTMICE_DEBUG"):
        env.pop(name, None)
    if api_url is not None:
        env["PREFECT_API_URL"] = api_url
    command = [sys.executable, "-c", script] if script else [sys.executable, "-m", "cli"]
    result = subprocess.run([*command, *argv, "--json"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def test_a_stored_run_is_answered_without_prefect_unless_a_server_is_set(prefect_api,
                                                                          tmp_path, blobs):
    Xs, y = blobs
    save_views_dir(tmp_path / "blobs", Xs, y)
    store = tmp_path / "store"
    cluster = ["cluster", str(tmp_path / "blobs"), "--k", "4", "--groups", "3",
               "--anchors", "40", "--store", str(store)]
    first = _run(cluster, prefect_api)
    assert first["groups_computed"] == 3 and not first.get("answered_from_store")

    again = _run(cluster, None, NO_PREFECT)  # asserts that Prefect was never imported
    assert again["answered_from_store"] is True
    assert again["run_id"] == first["run_id"] and again["labels_path"] == first["labels_path"]
    assert (again["groups_computed"], again["groups_reused"]) == (0, 3)
    assert (again["group_work"], again["consensus_work"]) == ({"reused": 3}, "reused")
    assert again["scores"] == first["scores"]
    assert len(list_runs(open_store(str(store)))) == 1  # nothing written

    other_seed = _run([*cluster, "--seed", "1"], prefect_api)  # not stored: a flow run
    assert other_seed["groups_computed"] == 3
    extended = _run(["extend", first["run_id"], "--groups", "1", "--store", str(store)],
                    prefect_api)
    assert extended["groups_computed"] == 1
    extend_again = _run(["extend", first["run_id"], "--groups", "1", "--store", str(store)],
                        None, NO_PREFECT)
    assert extend_again["answered_from_store"] and extend_again["run_id"] == extended["run_id"]

    with_server = _run(cluster, prefect_api)  # a server is set: the flow runs, all reused
    assert not with_server.get("answered_from_store")
    assert with_server["groups_computed"] == 0 and with_server["run_id"] != first["run_id"]
    assert len(list_runs(open_store(str(store)))) == 4


def test_unchanged_files_are_answered_without_reading_them(prefect_api, tmp_path, blobs,
                                                           monkeypatch, capfd):
    import pipeline.commands.cluster
    from cli.main import main
    from pipeline.sources import SOURCE

    Xs, y = blobs
    save_views_dir(tmp_path / "blobs", Xs, y)
    store_path = tmp_path / "store"
    cluster = ["cluster", str(tmp_path / "blobs"), "--k", "4", "--groups", "3",
               "--anchors", "40", "--store", str(store_path), "--json"]
    first = _run(cluster[:-1], prefect_api)
    store = open_store(str(store_path))
    assert len(store.list_records(SOURCE)) == 1

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    reads = []
    real_read = pipeline.commands.cluster.read_samples
    monkeypatch.setattr(pipeline.commands.cluster, "read_samples",
                        lambda *a, **k: reads.append(a) or real_read(*a, **k))

    def answer() -> dict:
        capfd.readouterr()
        assert main(cluster) == 0
        return json.loads(capfd.readouterr().out)

    again = answer()
    assert again["answered_from_store"] and again["run_id"] == first["run_id"] and not reads

    view = next((tmp_path / "blobs").glob("view0*"))
    os.utime(view, ns=(view.stat().st_atime_ns, view.stat().st_mtime_ns + 10**9))
    touched = answer()  # a touched file is read and hashed again: still the stored run
    assert touched["answered_from_store"] and touched["run_id"] == first["run_id"]
    assert len(reads) == 1 and len(store.list_records(SOURCE)) == 2
    assert answer()["answered_from_store"] and len(reads) == 1  # its new stamp is known

    capfd.readouterr()
    assert main(["rm", "blobs", "--runs", "--store", str(store_path)]) == 0
    assert store.list_records(SOURCE) == []


def test_auto_metrics_kept_in_one_mode_never_answer_another(prefect_api, tmp_path):
    """"auto" picks by the mode (the best mode compares histograms by Hellinger): the
    choices kept with the files in the paper mode must not plan a best-mode command, else
    a best-mode run made with those metrics given would answer it."""
    from cli.main import build_parser
    from cli.options import ensemble_values
    from pipeline.sources import source_stamp
    from pipeline.stored import answer_unchanged_files

    rng = np.random.default_rng(0)
    classes = np.repeat(np.arange(3), 40)
    Xs = []
    for width in (12, 8):  # histograms: non-negative rows summing to 1
        profiles = rng.dirichlet(np.ones(width), size=3)
        counts = np.array([rng.multinomial(200, profiles[c]) for c in classes], float)
        Xs.append(counts / counts.sum(axis=1, keepdims=True))
    save_views_dir(tmp_path / "hist", Xs, classes)
    store_path = tmp_path / "store"
    cluster = ["cluster", str(tmp_path / "hist"), "--k", "3", "--groups", "3",
               "--anchors", "30", "--store", str(store_path)]
    store = open_store(str(store_path))

    def metrics(run: dict) -> list[str]:
        return list(read_run(store, run["run_id"])["params"]["metric"])

    paper = _run([*cluster, "--mode", "paper", "--metric", "auto"], prefect_api)
    assert metrics(paper) == ["euclidean", "euclidean"]  # "auto" in the paper mode, kept
    given = _run([*cluster, "--mode", "best", "--metric", "euclidean"], prefect_api)

    args = build_parser().parse_args([*cluster, "--mode", "best"])  # "auto": hellinger
    stamp = source_stamp(args.data, "hist", None)
    assert answer_unchanged_files(store, stamp, "hist", ensemble_values(args)) is None
    best = _run([*cluster, "--mode", "best"], prefect_api)
    assert metrics(best) == ["hellinger", "hellinger"]
    assert best["run_id"] not in (paper["run_id"], given["run_id"])
