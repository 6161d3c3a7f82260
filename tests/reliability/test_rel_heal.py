"""The store heals: every reader treats a corrupt record or artifact alike (set aside with a
reason, reported in one line, the rest goes on), a damaged input batch is named and restored by
registering the same data, and ``fastmice fsck [--repair]`` says what it found and did."""

from __future__ import annotations

import os
import shutil
import time

import numpy as np
import pytest
from reliability_kit import (
    GROUPS,
    OPTIONS,
    flip_byte,
    labels_of,
    library_ids,
    make_data,
    one_json,
    run_cli,
    tree,
)

from cli.main import main
from pipeline.keys import BASE_LABELS, LABELS, RUN
from storage import DatasetStore, open_store

pytestmark = [pytest.mark.flows, pytest.mark.slow, pytest.mark.usefixtures("cli_env")]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("heal"))


@pytest.fixture(scope="module")
def two_runs(data, prefect_api, tmp_path_factory):
    """A store with a cluster run and its extension (copied by each case)."""
    store_dir = tmp_path_factory.mktemp("two-runs") / "store"
    first = one_json(run_cli(["cluster", data["tiny"], "--store", store_dir, *OPTIONS,
                              "--json"], prefect_api).stdout)
    second = one_json(run_cli(["extend", first["run_id"], "--groups", 2, "--store", store_dir,
                               "--json"], prefect_api).stdout)
    return store_dir, first["run_id"], second["run_id"]


@pytest.fixture
def copy(two_runs, tmp_path):
    store_dir = tmp_path / "store"
    shutil.copytree(two_runs[0], store_dir)
    return store_dir, open_store(store_dir), two_runs[1], two_runs[2]


def _main(capfd, *argv) -> tuple[int, str, list[str]]:
    """``fastmice ARGV`` in this process: status, stdout, stderr lines."""
    status = main([str(a) for a in argv])
    captured = capfd.readouterr()
    return status, captured.out, captured.err.splitlines()


def _record_file(store_dir, run_id):
    return store_dir / "records" / RUN / run_id / "v000001.json"


def _artifact(store_dir, store, kind, key=None):
    key = key or store.list(kind)[0]
    return store_dir / kind / key[:2] / key / store.read_meta(
        {"kind": kind, "key": key, "format": store.ref(kind, key).format})["file"]


def test_a_corrupt_run_record_hides_only_that_run(copy, prefect_api, capfd, battery):
    store_dir, _, first, second = copy
    flip_byte(_record_file(store_dir, second), 200)
    status, out, err = _main(capfd, "runs", "--store", store_dir, "--json")
    listed = [r["run_id"] for r in one_json(out)["runs"]]
    warned = len(err) == 1 and "warning: Quarantined corrupt record run/" in err[0]
    ok = status == 0 and listed == [first] and warned
    battery.record("heal", "one flipped byte in a run record: `fastmice runs`",
                   "the other runs listed, one warning line", f"status {status}; listed "
                   f"{len(listed)} of 2; warning lines {len(err)}", ok)
    status2, out2, _ = _main(capfd, "runs", "--dataset", "tiny", "--store", store_dir, "--json")
    ok2 = status2 == 0 and [r["run_id"] for r in one_json(out2)["runs"]] == [first]
    battery.record("heal", "the same: `fastmice runs --dataset tiny`", "the other runs listed",
                   f"status {status2}", ok2)
    result = run_cli(["recluster", "tiny", "--store", store_dir, "--json"], prefect_api,
                     check=False)
    ok3 = result.returncode == 0 and one_json(result.stdout)["parent_run"] == first
    battery.record("heal", "the same: `fastmice recluster tiny`",
                   "reclusters from the other run", f"status {result.returncode}", ok3)
    assert ok and ok2 and ok3, (err, result.stderr[-2000:])


def test_a_truncated_run_record_is_reported_by_show(copy, capfd, battery):
    store_dir, _, first, second = copy
    _record_file(store_dir, first).write_bytes(b"")
    status, out, err = _main(capfd, "show", first, "--store", store_dir)
    line = err[-1] if err else ""
    ok = (status == 1 and out == "" and "corrupt" in line and "quarantine" in line
          and line.startswith("fastmice show: error: "))
    status2, out2, _ = _main(capfd, "runs", "--store", store_dir, "--json")
    ok = ok and status2 == 0 and [r["run_id"] for r in one_json(out2)["runs"]] == [second]
    assert battery.record("heal", "an empty (truncated) run record: `fastmice show RUN`",
                          "status 1, one line saying it is corrupt and set aside; others "
                          "listed", f"status {status}: `{line[:100]}...`", ok), err


def test_a_damaged_input_batch_is_named_and_restored(copy, data, prefect_api, capfd,
                                                     battery):
    store_dir, store, first, _ = copy
    manifest = DatasetStore(store).manifest("tiny")
    view = manifest["batches"][0]["views"][1]
    flip_byte(_artifact(store_dir, store, view["kind"], view["key"]))
    failed = run_cli(["extend", first, "--groups", 3, "--store", store_dir], prefect_api,
                     check=False)
    line = failed.stderr.strip().splitlines()[-1]
    named = failed.returncode == 1 and "Dataset 'tiny'" in line and "batch 0 view 1" in line \
        and "fastmice append tiny DATA" in line
    battery.record("heal", "a corrupt input view (dataset batch file): `extend`",
                   "status 1, one line naming dataset, batch and view, and the fix",
                   f"status {failed.returncode}: `{line[:110]}...`", named)
    status, out, _ = _main(capfd, "fsck", "--store", store_dir)
    found = status == 1 and "damaged-input  dataset tiny batch 0: view 1" in out
    battery.record("heal", "the same: `fastmice fsck`", "reports the damaged batch, status 1",
                   f"status {status}", found)
    status, out, err = _main(capfd, "append", "tiny", data["tiny"], "--store", store_dir)
    restored = status == 0 and any("Restored view 1 of batch 0 of dataset 'tiny'" in e
                                   for e in err)
    battery.record("heal", "the same: `fastmice append tiny DATA` with the batch's data",
                   "restores the file under the same content key",
                   f"status {status}; {'restored' if restored else 'NOT restored'}", restored)
    summary = one_json(run_cli(["extend", first, "--groups", 2, "--store", store_dir,
                                "--json"], prefect_api).stdout)
    same = np.array_equal(labels_of(store, summary["run_id"]),
                          library_ids(store, summary["run_id"], data["labels_extended"]))
    battery.record("heal", "the same: `extend` again", "succeeds, identical labels",
                   f"labels {'identical' if same else 'DIFFERENT'}", same)
    assert named and found and restored and same, (failed.stderr[-2000:], out, err)


def test_cluster_with_the_same_data_restores_a_lost_batch(copy, data, prefect_api, battery):
    store_dir, store, *_ = copy
    manifest = DatasetStore(store).manifest("tiny")
    for ref in (manifest["batches"][0]["views"][0], manifest["batches"][0]["ids"]):
        shutil.rmtree(_artifact(store_dir, store, ref["kind"], ref["key"]).parent)
    result = run_cli(["cluster", data["tiny"], "--store", store_dir, *OPTIONS, "--json"],
                     prefect_api, check=False)
    ok = (result.returncode == 0 and "Restored view 0, ids of batch 0" in result.stderr
          and DatasetStore(store).damage("tiny") == []
          and np.array_equal(labels_of(store, one_json(result.stdout)["run_id"]),
                             data["labels"]))
    assert battery.record("heal", "a lost input view and ids file: `cluster` with the same "
                          "data", "restored (not 'already exists with other data'), identical "
                          "labels", f"status {result.returncode}", ok), result.stderr[-2000:]


def test_a_corrupt_latest_manifest_falls_back_and_append_restores_it(copy, data, capfd,
                                                                     battery):
    store_dir, store, *_ = copy
    status, *_ = _main(capfd, "append", "tiny", data["new"], "--store", store_dir)
    fingerprint = DatasetStore(store).manifest("tiny")["fingerprint"]
    flip_byte(store_dir / "records" / "dataset" / "tiny" / "v000002.json", 100)
    status1, out, err = _main(capfd, "append", "tiny", data["new"], "--store", store_dir,
                              "--json")
    manifest = DatasetStore(store).manifest("tiny")
    ok = (status == status1 == 0 and one_json(out)["appended"] and len(err) == 1
          and manifest["version"] == 2 and manifest["fingerprint"] == fingerprint)
    assert battery.record("heal", "a corrupt latest dataset manifest (after an append)",
                          "earlier version used, one warning line; the same append restores "
                          "the same fingerprint", f"status {status1}; warning lines {len(err)}",
                          ok), err


def test_corrupt_labels_are_rebuilt_by_show(copy, capfd, battery):
    store_dir, store, first, _ = copy
    expected = labels_of(store, first)
    record = store.read_record(RUN, first)
    flip_byte(_artifact(store_dir, store, LABELS, record["labels"]["key"]))
    status, _, err = _main(capfd, "show", first, "--store", store_dir)
    ok = (status == 0 and len(err) == 2 and "rebuilt from the stored consensus" in err[1]
          and np.array_equal(labels_of(store, first), expected))
    battery.record("heal", "a corrupt labels table: `fastmice show RUN`",
                   "set aside, rebuilt from the consensus, two warning lines, status 0",
                   f"status {status}; warning lines {len(err)}", ok)
    shutil.rmtree(store_dir / "consensus")
    record = store.read_record(RUN, first)
    shutil.rmtree(_artifact(store_dir, store, LABELS, record["labels"]["key"]).parent)
    status2, out2, err2 = _main(capfd, "show", first, "--store", store_dir)
    ok2 = status2 == 1 and out2 == "" and len(err2) == 1 and "rerun the command" in err2[0]
    assert battery.record("heal", "labels and consensus both lost: `fastmice show RUN`",
                          "status 1, one line saying to rerun", f"status {status2}",
                          ok2) and ok, (err, err2)


def test_a_corrupt_intermediate_is_recomputed_by_the_rerun(copy, data, prefect_api, battery):
    store_dir, store, first, _ = copy
    group0 = store.read_record(RUN, first)["groups"][0]["labels"]["key"]
    flip_byte(_artifact(store_dir, store, BASE_LABELS, group0))
    summary = one_json(run_cli(["cluster", data["tiny"], "--store", store_dir, *OPTIONS,
                                "--json"], prefect_api).stdout)
    ok = (summary["groups_computed"] == 1 and summary["work"]["base_clusterings"] == 1
          and np.array_equal(labels_of(store, summary["run_id"]), data["labels"])
          and len(store.quarantined()) == 1)
    assert battery.record("heal", "a corrupt base clustering: the same `cluster` again",
                          "set aside, only that group recomputed, identical labels",
                          f"{summary['groups_computed']} of {GROUPS} groups computed", ok)


def test_fsck_reports_read_only_then_repairs(copy, capfd, battery):
    store_dir, store, first, _ = copy
    old = time.time() - 7200
    leftover = store_dir / BASE_LABELS / "ab" / ".tmp-0123456789ab-x"
    leftover.mkdir(parents=True)
    os.utime(leftover, (old, old))
    (store_dir / "anchor-graph" / "cd" / "cd00").mkdir(parents=True)  # no meta.json
    meta = _artifact(store_dir, store, "group-anchors").parent / "meta.json"
    meta.write_text("{not json")
    flip_byte(_record_file(store_dir, first), 300)
    before = tree(store_dir)
    status, out, _ = _main(capfd, "fsck", "--store", store_dir)
    read_only = status == 1 and tree(store_dir) == before and out.count("\nfound ") == 5
    status2, out2, _ = _main(capfd, "fsck", "--repair", "--store", store_dir, "--json")
    report = one_json(out2)
    status3, out3, _ = _main(capfd, "fsck", "--store", store_dir)
    ok = (read_only and status2 == 0 and report["problems"] == 0 and not leftover.exists()
          and status3 == 0 and "0 needing action" in out3)
    assert battery.record(
        "heal", "`fastmice fsck` then `--repair`: a corrupt meta.json, a corrupt run record, "
        "a folder without meta.json, an old leftover",
        "read-only report (status 1, store unchanged), then all repaired, then nothing "
        "needing action",
        f"report status {status} ({out.count(chr(10) + 'found ')} findings); repair status "
        f"{status2}; after: status {status3}", ok), (out, out2, out3)
