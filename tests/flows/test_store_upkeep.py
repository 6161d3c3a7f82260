"""``rm`` and ``gc`` around real runs: the space of a removed run is freed, and a kept run's
command run again computes nothing, writes nothing and gives the same labels."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.housekeeping import collect_garbage, remove, store_report
from pipeline.keys import RUN
from storage.usage import store_usage

pytestmark = pytest.mark.flows

K, M, ANCHORS = 4, 4, 60


def _cluster(store, seed):
    from flows.pipeline import cluster_flow

    return cluster_flow(dataset="blobs", n_clusters=K, n_groups=M, random_state=seed,
                        store_url=store.url, n_anchors=ANCHORS)


def _labels(store, summary):
    return store.get(store.read_record(RUN, summary["run_id"])["labels"]).column(
        "label").to_numpy()


def _computed_nothing(store, summary):
    assert summary["groups_computed"] == 0
    assert summary["work"] == {"graphs_built": 0, "row_batches_computed": 0,
                               "row_batches_reused": summary["work"]["row_batches_reused"],
                               "base_clusterings": 0, "consensus": False}


def test_gc_after_rm_frees_the_space_and_kept_runs_recompute_nothing(prefect_api, registered):
    from flows.pipeline import extend_flow

    store = registered
    kept = _cluster(store, seed=3)
    other = _cluster(store, seed=4)
    extended = extend_flow(run_id=kept["run_id"], n_groups=2, store_url=store.url)
    own = {r["run_id"]: r["own_bytes"] for r in store_report(store)["runs"]}
    before = store_usage(store).total
    assert own[other["run_id"]] > 100_000

    remove(store, [other["run_id"]])
    gc = collect_garbage(store)
    assert gc.done and gc.freed == own[other["run_id"]]
    assert before - store_usage(store).total >= own[other["run_id"]]
    assert collect_garbage(store, dry_run=True).freed == 0

    artifacts = set(store_usage(store).artifacts)
    again = _cluster(store, seed=3)
    _computed_nothing(store, again)
    np.testing.assert_array_equal(_labels(store, again), _labels(store, kept))
    extended_again = extend_flow(run_id=kept["run_id"], n_groups=2, store_url=store.url)
    _computed_nothing(store, extended_again)
    extended_labels = _labels(store, extended)
    np.testing.assert_array_equal(_labels(store, extended_again), extended_labels)
    assert set(store_usage(store).artifacts) == artifacts  # nothing was written again

    from flows.pipeline import recluster_flow

    retained = collect_garbage(store, keep_last=1)  # the latest run: extended_again
    assert retained.done and store.list_records(RUN) == [extended_again["run_id"]]
    artifacts = set(store_usage(store).artifacts)
    reclustered = recluster_flow(dataset="blobs", store_url=store.url)
    _computed_nothing(store, reclustered)
    assert set(store_usage(store).artifacts) == artifacts
    np.testing.assert_array_equal(_labels(store, reclustered), extended_labels)


def test_the_inbox_flow_keeps_the_last_runs(prefect_api, tmp_path, blobs, split_batches):
    from flows.deployments import recluster_inbox
    from storage import open_store

    Xs, y = blobs
    inbox, store = tmp_path / "inbox", open_store(tmp_path / "store")
    inbox.mkdir()
    args = {"inbox": str(inbox), "dataset": "b", "n_clusters": K, "n_groups": M,
            "n_anchors": ANCHORS, "store_url": store.url, "keep_runs": 1}
    for i, (X, labels) in enumerate(split_batches(Xs, y, [400, 100, 100])):
        np.savez(inbox / f"batch-{i}.npz", labels=labels,
                 **{f"view{v}": view for v, view in enumerate(X)})
        result = recluster_inbox(**args)
        assert result["action"] == ("cluster" if i == 0 else "recluster")
        assert result["housekeeping"]["done"]
        assert store.list_records(RUN) == [result["run"]["run_id"]]
    assert result["housekeeping"]["runs_removed"] and result["housekeeping"]["freed_bytes"] > 0
    assert collect_garbage(store, dry_run=True).freed == 0
    assert set(_labels(store, result["run"]).tolist()) <= set(range(K + 2))
    with pytest.raises(ValueError, match="must be >= 1"):
        recluster_inbox(**{**args, "keep_runs": 0})
