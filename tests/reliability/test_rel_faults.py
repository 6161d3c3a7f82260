"""The fault battery: a command killed at a named point (``FASTMICE_FAULT``), or out of disk
space at a write, then run again.

After each kill the store holds no partial artifact (a read-only fsck finds nothing corrupt
or incomplete), the rerun finishes, computes exactly what was missing (counted from what the
store held before it) and gives the labels of an uninterrupted run (the library's). After a
disk-full error the command has said so in one line, left nothing half-written, and the next
run succeeds.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from reliability_kit import (
    GROUPS,
    OPTIONS,
    counts,
    labels_of,
    library_ids,
    make_data,
    one_json,
    run_cli,
)

from pipeline.keys import ANCHORS as ANCHORS_KIND
from pipeline.keys import BASE_LABELS, CONSENSUS, LABELS, RUN
from storage import open_store
from storage.fsck import check_store

pytestmark = [pytest.mark.flows, pytest.mark.slow]

KILLS = [
    ("write:dataset-view:2", "ingest: mid-write of the second view file"),
    ("record:dataset:1", "ingest: views stored, dataset manifest not yet"),
    ("write:view-groups:1", "mid-write of the view-group specs"),
    ("write:anchor-graph:2", "mid-write of a graph"),
    ("compute:group-anchors:1", "a graph computed, none of it stored"),
    ("published:group-anchors:2", "between a graph and its base clustering"),
    ("compute:base-labels:2", "a base clustering computed, not stored"),
    ("write:base-partition:1", "mid-write of a base partition"),
    ("write:base-labels:3", "mid-write of the last base labels"),
    ("compute:consensus:1", "during the consensus"),
    ("write:consensus:1", "mid-write of the consensus"),
    ("write:labels:1", "while writing the labels table"),
    ("record:run:1", "while writing the run record"),
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def clustered(data, prefect_api, tmp_path_factory):
    """A store holding one uninterrupted run of the data (copied by the cases that need it)."""
    store_dir = tmp_path_factory.mktemp("clustered") / "store"
    summary = one_json(run_cli(["cluster", data["tiny"], "--store", store_dir, *OPTIONS,
                                "--json"], prefect_api).stdout)
    np.testing.assert_array_equal(labels_of(open_store(store_dir), summary["run_id"]),
                                  data["labels"])
    return store_dir, summary["run_id"]


def _sound(store) -> list[str]:
    """What a read-only fsck finds that a crash must never leave: corrupt or incomplete."""
    return [f.line() for f in check_store(store).findings
            if f.what not in ("leftover", "missing")]


def _stored(store) -> dict[str, int]:
    return counts(store, ANCHORS_KIND, BASE_LABELS, CONSENSUS, LABELS)


def _resume(store, args, killed, before, n_groups, expected_labels, api_url, consensus=0):
    """Rerun after a kill; what it did, checked against what the store held (``consensus``:
    consensus artifacts of earlier runs, not this one's)."""
    rerun = one_json(run_cli(args, api_url).stdout)
    work = rerun["work"]
    new_groups = n_groups - before[BASE_LABELS]
    checks = {
        "rerun computed only the unfinished groups": rerun["groups_computed"] == new_groups,
        "graphs built only where missing":
            work["graphs_built"] == n_groups - before[ANCHORS_KIND],
        "base clusterings only where missing": work["base_clusterings"] == new_groups,
        "consensus only if missing": work["consensus"] == (before[CONSENSUS] == consensus),
        "identical labels": np.array_equal(labels_of(store, rerun["run_id"]), library_ids(
            store, rerun["run_id"], expected_labels)),
        "no partial artifact read (nothing quarantined)": store.quarantined() == [],
        "store sound after the rerun": check_store(store).problems == 0,
    }
    got = (f"rc {killed.returncode}; {before[BASE_LABELS]}/{n_groups} groups stored; rerun "
           f"{rerun['groups_computed']} groups, {work['graphs_built']} graphs, "
           f"{work['base_clusterings']} bases, consensus {'yes' if work['consensus'] else 'no'}"
           f"; labels {'identical' if checks['identical labels'] else 'DIFFERENT'}")
    return checks, got


@pytest.mark.parametrize(("fault", "what"), KILLS, ids=[f for f, _ in KILLS])
def test_kill_then_rerun(fault, what, data, prefect_api, tmp_path, battery):
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    args = ["cluster", data["tiny"], "--store", store_dir, *OPTIONS, "--json"]
    killed = run_cli(args, prefect_api, fault=fault, check=False)
    before, left, records = _stored(store), _sound(store), store.list_records(RUN)
    checks, got = _resume(store, args, killed, before, GROUPS, data["labels"], prefect_api)
    checks["killed at the point (SIGKILL)"] = killed.returncode == -9
    checks["no partial artifact visible after the kill"] = left == []
    checks["no run record after the kill"] = records == []
    failed = [name for name, ok in checks.items() if not ok]
    assert battery.record("kill", f"`{fault}` ({what})",
                          "rerun recomputes only what is missing; identical labels",
                          got, not failed), (failed, left, killed.stderr[-2000:])


def test_kill_during_extend_then_rerun(clustered, data, prefect_api, tmp_path, battery):
    store_dir = tmp_path / "store"
    shutil.copytree(clustered[0], store_dir)
    store = open_store(store_dir)
    # One group at a time: two groups finishing together could both publish before the kill.
    args = ["extend", clustered[1], "--groups", 2, "--n-jobs", 1, "--store", store_dir,
            "--json"]
    killed = run_cli(args, prefect_api, fault="published:base-labels:1", check=False)
    before = _stored(store)
    checks, got = _resume(store, args, killed, before, GROUPS + 2, data["labels_extended"],
                          prefect_api, consensus=1)
    checks["killed"] = killed.returncode == -9 and before[BASE_LABELS] == GROUPS + 1
    checks["sound after the kill"] = _sound(store) == []
    failed = [name for name, ok in checks.items() if not ok]
    assert battery.record("kill", "`published:base-labels:1` during `extend` (one new group "
                          "stored, one not)", "rerun computes the other new group only",
                          got, not failed), failed


def test_kill_during_recluster_then_rerun(clustered, data, prefect_api, tmp_path, battery):
    def appended(name):
        store_dir = tmp_path / name
        shutil.copytree(clustered[0], store_dir)
        run_cli(["append", "tiny", data["new"], "--store", store_dir])
        return store_dir

    reference_dir = appended("reference")
    reference = one_json(run_cli(["recluster", "tiny", "--store", reference_dir, "--json"],
                                 prefect_api).stdout)
    store_dir = appended("store")
    store = open_store(store_dir)
    args = ["recluster", "tiny", "--store", store_dir, "--json"]
    killed = run_cli(args, prefect_api, fault="published:anchor-graph:2", check=False)
    rows_before = len(store.list("anchor-graph"))
    rerun = one_json(run_cli(args, prefect_api).stdout)
    same = np.array_equal(labels_of(store, rerun["run_id"]),
                          labels_of(open_store(reference_dir), reference["run_id"]))
    placed = rerun["work"]["row_batches_computed"]
    ok = (killed.returncode == -9 and same and rerun["work"]["graphs_built"] == 0
          and placed == GROUPS - (rows_before - GROUPS) and store.quarantined() == []
          and _sound(store) == [])
    assert battery.record(
        "kill", "`published:anchor-graph:2` during `recluster` after `append` (the new batch's "
        "rows)", "rerun places only the missing rows; labels of an uninterrupted recluster",
        f"rc {killed.returncode}; {rows_before - GROUPS}/{GROUPS} new row blocks stored; rerun "
        f"placed {placed}; labels {'identical' if same else 'DIFFERENT'}", ok), rerun


def test_sigterm_stops_cleanly_and_resumes(data, prefect_api, tmp_path, battery):
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    args = ["cluster", data["tiny"], "--store", store_dir, *OPTIONS, "--json"]
    stopped = run_cli(args, prefect_api, fault="published:base-labels:1:term", check=False)
    before = _stored(store)
    checks, got = _resume(store, args, stopped, before, GROUPS, data["labels"], prefect_api)
    checks["status 130, one line"] = stopped.returncode == 130 and stopped.stderr.strip(
        ).splitlines()[-1] == "fastmice: interrupted; rerun the same command to resume."
    failed = [name for name, ok in checks.items() if not ok]
    assert battery.record("kill", "SIGTERM after the first base clustering",
                          "clean stop (status 130), resumable", got, not failed), (
        failed, stopped.stderr[-2000:])


ENOSPC = [
    ("write:dataset-view:1+:enospc", "cluster", "storing the data (ingest)"),
    ("write:anchor-graph:1+:enospc", "cluster", "writing the graphs (in the task runs)"),
    ("record:run:1+:enospc", "cluster", "writing the run record"),
]


@pytest.mark.parametrize(("fault", "command", "what"), ENOSPC, ids=[f for f, *_ in ENOSPC])
def test_disk_full_is_one_line_and_the_next_run_succeeds(fault, command, what, data,
                                                         prefect_api, tmp_path, battery):
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    args = [command, data["tiny"], "--store", store_dir, *OPTIONS, "--json"]
    full = run_cli(args, prefect_api, fault=fault, check=False)
    err = full.stderr.strip().splitlines()
    line = err[-1] if err else ""
    leftovers = [str(p) for p in store_dir.rglob(".tmp-*")] if store_dir.exists() else []
    after = one_json(run_cli(args, prefect_api).stdout)
    same = np.array_equal(labels_of(store, after["run_id"]), data["labels"])
    ok = (full.returncode == 1 and line.startswith(f"fastmice {command}: error: ")
          and "No space left on device" in line and "rerun" in line and leftovers == []
          and same and _sound(store) == [])
    assert battery.record("disk full", f"ENOSPC while {what} (`{fault}`)",
                          "status 1, one line; nothing half-written; next run succeeds",
                          f"status {full.returncode}: `{line[:90]}...`; {len(leftovers)} "
                          f"leftovers; next run labels {'identical' if same else 'DIFFERENT'}",
                          ok), (full.stderr[-3000:], leftovers)
