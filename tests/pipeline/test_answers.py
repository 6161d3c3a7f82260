"""The kept answer of ``cluster`` of unchanged files (pipeline.stored): read and checked in
a few reads that do not grow with the runs of the store, and never an answer that no longer
holds (a removed, rewritten or corrupt run, dataset or labels table)."""

from __future__ import annotations

import threading
import uuid

import numpy as np
import pytest

import fastmice
from pipeline.housekeeping import collect_garbage, remove
from pipeline.ingest import register_batch
from pipeline.keys import LABELS, RUN
from pipeline.plans import plan_cluster
from pipeline.stored import (
    ANSWER,
    answer_name,
    forget_answers,
    recall_answer,
    remember_answer,
    stored_run,
)
from storage import FsspecStore, content_key, open_store
from storage.datasets import RECORD_KIND
from storage.usage import remove_record

VALUES = {"n_clusters": 3, "n_groups": 2, "n_anchors": 20, "n_jobs": 1}
STAMP = "f" * 40


@pytest.fixture(params=["local", "memory"])
def store(request, tmp_path):
    if request.param == "local":
        return open_store(tmp_path / "store")
    return FsspecStore(f"memory://fastmice-answers-{uuid.uuid4().hex}")


def _views(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.random((60, 4)), rng.random((60, 3))]


def _run(store, run_id: str, values: dict = VALUES) -> dict:
    """A run record that computed the cluster plan of dataset ``d`` with ``values``."""
    plan = plan_cluster(store, "d", **values)
    labels = store.put(LABELS, content_key(run_id, "labels"), np.arange(60) % 3)
    record = {"run_id": run_id, "kind": "cluster", "parent_run": None, "dataset": "d",
              "created": f"2026-01-01T00:00:{len(store.list_records(RUN)):02d}",
              "dataset_fingerprint": plan.data["fingerprint"],
              "anchor_fingerprint": plan.anchor_data["fingerprint"],
              "code_version": fastmice.CODE_VERSION, "warm_start": None,
              "labels": labels.to_dict(), "params": plan.params.to_dict(), "n_groups": 2}
    store.write_record(RUN, run_id, record)
    return record


@pytest.fixture
def answered(store):
    register_batch(store, "d", _views(0), None, mode="create")
    _run(store, "d-run")
    name = answer_name(STAMP, {**VALUES, "n_jobs": None})
    remember_answer(store, name, "d-run", VALUES)
    return store, name


class _Counted:
    """Counts a store's file reads and listings (on an object store, one request each)."""

    def __init__(self, store, monkeypatch) -> None:
        self.reads: list[str] = []
        self.listings: list[str] = []
        inside = threading.local()  # a read made by another (a digest's) is not counted

        def counted(real, log):
            def call(rel, *args):
                depth = getattr(inside, "depth", 0)
                if not depth:
                    log.append(rel)
                inside.depth = depth + 1
                try:
                    return real(rel, *args)
                finally:
                    inside.depth = depth
            return call

        for method, log in (("_read_bytes", self.reads), ("_file_digest", self.reads),
                            ("_listdir", self.listings)):
            monkeypatch.setattr(store, method, counted(getattr(store, method), log))


def test_a_kept_answer_is_found_in_a_few_reads_whatever_the_runs_kept(answered, monkeypatch):
    store, name = answered
    for i in range(5):  # other runs of the dataset: the answer does not read them
        _run(store, f"d-other-{i}", {**VALUES, "random_state": i + 1})
    counted = _Counted(store, monkeypatch)
    record = recall_answer(store, name)
    assert record is not None and record["run_id"] == "d-run"
    # The answer; the run's and the dataset's record (each listed: the latest version);
    # the labels table's meta.json and data file (checksummed).
    assert len(counted.reads) == 5 and len(counted.listings) == 2, (counted.reads,
                                                                    counted.listings)
    assert not any(rel.rstrip("/").endswith(f"records/{RUN}") for rel in counted.listings)
    assert not any("d-other" in rel for rel in counted.reads + counted.listings)


def test_a_remote_labels_table_is_checked_in_one_round_trip(answered, monkeypatch):
    """On a store over a network, the labels table's meta.json and data file are read at
    once: each read waits here until the other has started (never, one after the other)."""
    store, name = answered
    if not store._round_trips:
        pytest.skip("a local store reads one file after the other")
    both = threading.Barrier(2, timeout=10)
    real_read, real_digest = store._read_bytes, store._file_digest

    def read(rel, *args):
        if f"/{LABELS}/" in f"/{rel}" and rel.endswith("meta.json"):
            both.wait()
        return real_read(rel, *args)

    def digest(rel, *args):
        if f"/{LABELS}/" in f"/{rel}":
            both.wait()
        return real_digest(rel, *args)

    monkeypatch.setattr(store, "_read_bytes", read)
    monkeypatch.setattr(store, "_file_digest", digest)
    record = recall_answer(store, name)
    assert record is not None and record["run_id"] == "d-run"


def test_the_answer_is_the_stored_run_of_the_usual_path(answered):
    store, name = answered
    plan = plan_cluster(store, "d", **VALUES)
    assert recall_answer(store, name)["run_id"] == stored_run(store, plan)["run_id"] == "d-run"
    assert store.record_versions(ANSWER, name) == [1]
    created = store.read_record(ANSWER, name)
    remember_answer(store, name, "d-run", VALUES)  # the same answer: nothing written
    assert store.record_versions(ANSWER, name) == [1]
    assert store.read_record(ANSWER, name) == created
    _run(store, "d-later")
    remember_answer(store, name, "d-later", VALUES)  # another: replaced, still version 1
    assert store.record_versions(ANSWER, name) == [1]
    assert recall_answer(store, name)["run_id"] == "d-later"


def test_the_answer_s_name_is_the_files_and_the_parameters_as_given():
    given = {**VALUES, "n_clusters": None}
    assert answer_name(STAMP, given) == answer_name(STAMP, {**given, "n_jobs": 7})
    assert answer_name(STAMP, given) != answer_name(STAMP, {**given, "n_groups": 3})
    assert answer_name(STAMP, given) != answer_name("e" * 40, given)


def _corrupt(store, rel: str) -> None:
    data = bytearray(store._read_bytes(rel))
    data[len(data) // 2] ^= 0x01
    store._write_bytes(rel, bytes(data))


def _run_removed(store):
    remove_record(store, RUN, "d-run")


def _run_corrupt(store):
    _corrupt(store, f"records/{RUN}/d-run/v000001.json")


def _run_rewritten(store):
    store.write_record(RUN, "d-run", {**store.read_record(RUN, "d-run"), "n_groups": 3})


def _labels_corrupt(store):
    ref = store.read_record(RUN, "d-run")["labels"]
    _corrupt(store, f"{LABELS}/{ref['key'][:2]}/{ref['key']}/data.npy")


def _labels_removed(store):
    ref = store.read_record(RUN, "d-run")["labels"]
    store.delete(ref)


def _batch_appended(store):
    register_batch(store, "d", _views(1), None, mode="append")


def _dataset_replaced(store):
    remove_record(store, RECORD_KIND, "d")  # and registered anew, with other data
    register_batch(store, "d", _views(2), None, mode="create")


def _parameters_changed(store):  # the run was made with other parameters
    record = store.read_record(RUN, "d-run")
    remove_record(store, RUN, "d-run")
    store.write_record(RUN, "d-run", {**record, "params": {**record["params"],
                                                           "n_anchors": 21}})


def _answer_corrupt(store):
    name = store.list_records(ANSWER)[0]
    _corrupt(store, f"records/{ANSWER}/{name}/v000001.json")


@pytest.mark.parametrize("damage", [_run_removed, _run_corrupt, _run_rewritten, _labels_corrupt,
                                    _labels_removed, _batch_appended, _dataset_replaced,
                                    _parameters_changed, _answer_corrupt])
def test_an_answer_that_no_longer_holds_answers_nothing(answered, damage):
    store, name = answered
    damage(store)
    assert recall_answer(store, name) is None
    if damage is _labels_corrupt:  # set aside, as every read of a corrupt artifact does
        assert len(store.quarantined()) == 1


def test_rm_and_gc_remove_the_answers_of_the_runs_they_remove(answered):
    store, _ = answered
    _run(store, "d-kept")
    kept = answer_name(STAMP, {**VALUES, "n_groups": 9})
    remember_answer(store, kept, "d-kept", VALUES)
    assert len(store.list_records(ANSWER)) == 2
    remove(store, ["d-run"])
    assert store.list_records(ANSWER) == [kept]

    remove_record(store, RUN, "d-kept")  # a run gone by other means: gc drops its answer
    assert collect_garbage(store).done
    assert store.list_records(ANSWER) == []
    assert forget_answers(store, keep_runs=set()) == 0
