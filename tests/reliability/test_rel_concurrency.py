"""Commands racing on one store, and locks left behind by killed processes.

Two identical ``cluster`` commands at once both succeed with the library's labels, every
step computed once and every artifact stored once; ``recluster`` while ``append`` adds a
batch, and two ``extend`` of one run, leave a consistent store; a lock whose owner was killed
never blocks the next command.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from reliability_kit import (
    GROUPS,
    OPTIONS,
    ROOT,
    counts,
    env,
    labels_of,
    library_ids,
    make_data,
    one_json,
    run_cli,
    start_cli,
)

from pipeline.keys import ANCHORS, BASE_LABELS, CONSENSUS, GRAPH_ROWS, LABELS, RUN
from storage import DatasetStore, open_store
from storage.fsck import check_store
from storage.locks import LOCKS_DIR, process_identity

pytestmark = [pytest.mark.flows, pytest.mark.slow]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("concurrency"))


@pytest.fixture(scope="module")
def clustered(data, prefect_api, tmp_path_factory):
    store_dir = tmp_path_factory.mktemp("clustered") / "store"
    summary = one_json(run_cli(["cluster", data["tiny"], "--store", store_dir, *OPTIONS,
                                "--json"], prefect_api).stdout)
    return store_dir, summary["run_id"]


def _both(*procs: subprocess.Popen) -> list[dict]:
    """Wait for commands started together; their JSON results (asserting status 0)."""
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-3000:]
        out.append(one_json(stdout))
    return out


def _work(results: list[dict], name: str) -> int:
    return sum(int(r["work"][name]) for r in results)


def test_two_identical_clusters_at_once(data, prefect_api, tmp_path, battery):
    store_dir = tmp_path / "store"
    args = ["cluster", data["tiny"], "--store", store_dir, *OPTIONS, "--json"]
    results = _both(start_cli(args, prefect_api), start_cli(args, prefect_api))
    store = open_store(store_dir)
    same = all(np.array_equal(labels_of(store, r["run_id"]), data["labels"]) for r in results)
    stored = counts(store, ANCHORS, GRAPH_ROWS, BASE_LABELS, CONSENSUS, LABELS)
    once = stored == {ANCHORS: GROUPS, GRAPH_ROWS: GROUPS, BASE_LABELS: GROUPS, CONSENSUS: 1,
                      LABELS: 1}
    computed = (_work(results, "graphs_built"), _work(results, "base_clusterings"),
                _work(results, "consensus"))
    registered = sorted(r["dataset_registered"] for r in results)
    ok = (same and once and computed == (GROUPS, GROUPS, 1) and registered == [False, True]
          and store.record_versions("dataset", "tiny") == [1]
          and len(store.list_records(RUN)) == 2 and check_store(store).problems == 0
          and not list(store_dir.rglob(".tmp-*")))
    assert battery.record(
        "concurrency", "two identical `cluster` commands at once, one store",
        "both succeed, identical labels, each step computed once, each artifact stored once",
        f"both status 0; labels {'identical' if same else 'DIFFERENT'}; graphs/bases/consensus "
        f"computed {computed[0]}/{computed[1]}/{computed[2]} in all; artifacts {stored}",
        ok), (results, stored)


def test_recluster_while_append(clustered, data, prefect_api, tmp_path, battery):
    store_dir = tmp_path / "store"
    shutil.copytree(clustered[0], store_dir)
    recluster = start_cli(["recluster", "tiny", "--store", store_dir, "--json"], prefect_api)
    time.sleep(1.0)  # the recluster is planning while the batch arrives
    appended, reclustered = _both(
        start_cli(["append", "tiny", data["new"], "--store", store_dir, "--json"]), recluster)
    store = open_store(store_dir)
    record = store.read_record(RUN, reclustered["run_id"])
    version = record["dataset_version"]
    manifest = DatasetStore(store).manifest("tiny", version=version)
    consistent = (record["dataset_fingerprint"] == manifest["fingerprint"]
                  and record["batches"] == [b["batch_id"] for b in manifest["batches"]]
                  and len(labels_of(store, reclustered["run_id"])) == manifest["n_samples"])
    after = one_json(run_cli(["recluster", "tiny", "--store", store_dir, "--json"],
                             prefect_api).stdout)
    final = DatasetStore(store).manifest("tiny")
    again = after["n_samples"] == final["n_samples"] == 240 and (
        version == 1 or after["groups_computed"] == 0)
    ok = (appended["appended"] and consistent and again and check_store(store).problems == 0)
    assert battery.record(
        "concurrency", "`recluster` while `append` adds a batch",
        "both succeed; the run matches the dataset version it read; a later recluster agrees",
        f"append ok; recluster read version {version} ({record['n_samples']} samples), record "
        f"{'consistent' if consistent else 'INCONSISTENT'}; later recluster "
        f"{after['groups_computed']} groups computed on {after['n_samples']} samples", ok)


def test_two_extends_of_one_run_at_once(clustered, data, prefect_api, tmp_path, battery):
    store_dir = tmp_path / "store"
    shutil.copytree(clustered[0], store_dir)
    args = ["extend", clustered[1], "--groups", 2, "--store", store_dir, "--json"]
    results = _both(start_cli(args, prefect_api), start_cli(args, prefect_api))
    store = open_store(store_dir)
    same = all(np.array_equal(labels_of(store, r["run_id"]),
                              library_ids(store, r["run_id"], data["labels_extended"]))
               for r in results)
    computed = (_work(results, "graphs_built"), _work(results, "base_clusterings"),
                _work(results, "consensus"))
    stored = counts(store, ANCHORS, BASE_LABELS, CONSENSUS)
    ok = (same and computed == (2, 2, 1) and stored == {ANCHORS: GROUPS + 2,
                                                       BASE_LABELS: GROUPS + 2, CONSENSUS: 2}
          and check_store(store).problems == 0)
    assert battery.record(
        "concurrency", "two `extend --groups 2` of one run at once",
        "both succeed with identical labels; the new groups computed once",
        f"labels {'identical' if same else 'DIFFERENT'}; new graphs/bases/consensus computed "
        f"{computed[0]}/{computed[1]}/{computed[2]} in all; artifacts {stored}", ok), results


HOLD = """
import sys, time
from storage import open_store
with open_store(sys.argv[1]).lock(sys.argv[2]):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_lock_left_by_a_killed_process_does_not_block(data, prefect_api, tmp_path, battery):
    store_dir = tmp_path / "store"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store_dir), "dataset-tiny"],
                              cwd=ROOT, env=env(), stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    lock_file = store_dir / LOCKS_DIR / "dataset-tiny.lock"
    left = lock_file.exists()
    started = time.time()
    result = run_cli(["cluster", data["tiny"], "--store", store_dir, *OPTIONS, "--json"],
                     prefect_api, timeout=120)
    seconds = time.time() - started
    ok = left and one_json(result.stdout)["groups_computed"] == GROUPS and seconds < 60
    assert battery.record(
        "concurrency", "the lock of a dataset held by a process killed with SIGKILL",
        "the next command does not wait for it",
        f"lock file left behind: {left}; next `cluster` done in {seconds:.1f} s", ok)


def test_a_lease_whose_owner_is_gone_is_broken(battery):
    store = open_store("memory://leases")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = {**process_identity(), "pid": int(gone.stdout), "start": "1"}
    elsewhere = {**process_identity(), "host": "another-host"}
    cases = []
    for owner, expires, should_wait in ((dead, time.time() + 900, False),
                                        (elsewhere, time.time() - 1, False),
                                        (elsewhere, time.time() + 900, True)):
        store._write_bytes(f"{LOCKS_DIR}/x.json",
                           json.dumps({"owner": owner, "expires": expires}).encode())
        try:
            with store.lock("x", timeout=0.5):
                waited = False
        except TimeoutError:
            waited = True
        cases.append(waited == should_wait)
        with contextlib.suppress(FileNotFoundError):
            store.fs.rm(store._path(f"{LOCKS_DIR}/x.json"))
    assert battery.record(
        "concurrency", "fsspec lease locks: dead owner, expired lease elsewhere, live lease "
        "elsewhere", "broken, broken, waited for",
        "as expected" if all(cases) else f"{cases}", all(cases))
