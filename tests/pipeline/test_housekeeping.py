"""Keeping a store tidy without Prefect: sizes, rm, gc, retention, and live runs respected."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import numpy as np
import pytest

from pipeline.housekeeping import (
    collect_garbage,
    plan_removal,
    remove,
    retention,
    store_report,
)
from pipeline.ingest import register_batch
from pipeline.keys import RUN
from storage import FsspecStore, content_key, open_store
from storage.activity import ACTIVE_DIR, live, working
from storage.locks import process_identity
from storage.usage import store_usage


@pytest.fixture(params=["local", "memory"])
def any_store(request, tmp_path):
    if request.param == "local":
        return open_store(tmp_path / "store")
    return FsspecStore(f"memory://fastmice-hk-{uuid.uuid4().hex}")


def _run(store, run_id, dataset, created, payload):
    """A run record referring to artifacts of ``payload`` bytes each (graph rows, labels)."""
    refs = []
    for kind in ("anchor-graph", "labels"):
        data = np.full(payload // 8, hash((run_id, kind)) % 1000, dtype=np.int64)
        refs.append(store.put(kind, content_key(run_id, kind), data).to_dict())
    store.write_record(RUN, run_id, {"run_id": run_id, "dataset": dataset, "created": created,
                                     "kind": "cluster", "groups": [{"rows": {"0": refs[0]}}],
                                     "labels": refs[1]})
    return refs


@pytest.fixture
def populated(any_store):
    rng = np.random.default_rng(0)
    register_batch(any_store, "d", [rng.random((50, 4)), rng.random((50, 3))], None,
                   mode="create")
    for i in range(3):
        _run(any_store, f"d-run{i}", "d", f"2026-01-0{i + 1}", 80_000)
    return any_store


def _artifacts(store):
    return set(store_usage(store).artifacts)


def test_rm_then_gc_frees_the_run_s_own_files(populated):
    store = populated
    report = store_report(store)
    own = {r["run_id"]: r["own_bytes"] for r in report["runs"]}
    assert own["d-run1"] >= 160_000 and report["unreferenced_bytes"] == 0
    before = store_usage(store).total

    dry = remove(store, ["d-run1"], dry_run=True)
    assert dry["runs"] == ["d-run1"] and store.record_version(RUN, "d-run1")
    assert dry["gc_frees_bytes"] == own["d-run1"]
    assert collect_garbage(store).freed == 0  # nothing is garbage while the run is kept

    removed = remove(store, ["d-run1"])
    assert removed["gc_frees_bytes"] == own["d-run1"] and not store.record_version(RUN, "d-run1")
    gc = collect_garbage(store)
    assert gc.done and gc.freed == own["d-run1"]
    assert store_usage(store).total <= before - own["d-run1"]
    kept = store_report(store)
    assert [r["run_id"] for r in kept["runs"]] == ["d-run0", "d-run2"]
    for r in kept["runs"]:  # every file a kept run needs is still there and valid
        record = store.read_record(RUN, r["run_id"])
        assert store.exists("labels", record["labels"]["key"])
        assert store.exists("anchor-graph", record["groups"][0]["rows"]["0"]["key"])


def test_a_dataset_with_runs_is_removed_only_with_its_runs(populated):
    store = populated
    with pytest.raises(ValueError, match=r"Dataset 'd' has 3 run\(s\).*--runs.*Nothing"):
        plan_removal(store, ["d"])
    with pytest.raises(ValueError, match="No run or dataset named 'nope'"):
        plan_removal(store, ["d-run0", "nope"])
    assert store.record_version(RUN, "d-run0")  # nothing removed by a refused rm
    dry = remove(store, ["d"], with_runs=True, dry_run=True)
    assert dry["datasets"] == ["d"] and len(dry["runs"]) == 3
    assert dry["gc_frees_bytes"] == sum(store_usage(store).artifacts.values())
    remove(store, ["d"], with_runs=True)
    collect_garbage(store)
    assert _artifacts(store) == set()


def test_retention_keeps_the_latest_runs_of_each_dataset(populated):
    store = populated
    _run(store, "e-run0", "e", "2026-01-01", 8_000)
    assert retention([{"run_id": f"r{i}", "dataset": "x"} for i in range(4)], 2) == ["r0", "r1"]
    with pytest.raises(ValueError, match="must be >= 1"):
        retention([], 0)
    dry = collect_garbage(store, dry_run=True, keep_last=1)
    assert dry.runs == ["d-run0", "d-run1"] and not dry.done
    assert store.record_version(RUN, "d-run0")  # a dry run removes nothing
    done = collect_garbage(store, keep_last=1, dataset="d")
    assert done.runs == ["d-run0", "d-run1"] and done.freed == dry.freed
    assert sorted(store.list_records(RUN)) == ["d-run2", "e-run0"]


def test_nothing_is_collected_while_a_run_writes(populated):
    store = populated
    remove(store, ["d-run0"])
    with working(store, "run d-run9"):
        busy = collect_garbage(store)
        assert busy.busy == ["run d-run9"] and not busy.done and busy.freed > 0
        assert store.record_version(RUN, "d-run1")
    assert collect_garbage(store).done


def test_a_marker_left_by_a_killed_process_does_not_block(populated):
    store = populated
    remove(store, ["d-run0"])
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    dead = process_identity(int(child.stdout))
    dead["start"] = dead["start"] or "0"
    marker = {"owner": dead, "what": "run x", "started": 0}
    store._write_bytes(f"{ACTIVE_DIR}/left.json", json.dumps(marker).encode())
    assert live(store) == []
    gc = collect_garbage(store)
    assert gc.done and gc.freed > 0 and store._listdir(ACTIVE_DIR) == []


def test_other_kinds_and_records_are_never_collected(any_store):
    store = any_store
    mine = store.put("notes", "k1", {"a": 1})
    store.write_record("experiment", "x", {"ref": mine.to_dict()})
    orphan = store.put("consensus", "k2", {"labels": np.arange(3)})
    gc = collect_garbage(store)
    assert list(gc.artifacts) == [("consensus", orphan.key)]
    assert store.exists("notes", "k1") and store.record_version("experiment", "x")
