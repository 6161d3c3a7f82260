"""The flows end to end on small data: identical labels to the library, and reuse counted."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp

import fastmice
from pipeline.ingest import register_batch
from pipeline.keys import BASE_LABELS, RUN
from storage.datasets import DatasetStore

pytestmark = pytest.mark.flows

K, M, ANCHORS, SEED = 4, 5, 60, 3


def _labels(store, summary):
    record = store.read_record(RUN, summary["run_id"])
    return store.get(record["labels"]).column("label").to_numpy()


def _matched(store, summary, expected):
    """``expected`` (library labels) with the cluster ids the run gave them: the same
    partition, its ids matched to the parent run's (the record's ``relabel``)."""
    relabel = store.read_record(RUN, summary["run_id"])["relabel"]
    assert relabel is not None and relabel["parent_run"] == summary["parent_run"]
    mapping = dict(map(tuple, relabel["mapping"]))
    return np.array([mapping[label] for label in expected])


def _kept(store, summary, parent):
    """The fraction of the parent run's samples that keep their cluster id."""
    old = _labels(store, parent)
    return float(np.mean(_labels(store, summary)[:old.size] == old))


def _library(Xs, n_groups=M):
    return fastmice.FastMICE(K, n_groups=n_groups, n_anchors=ANCHORS, mode="best",
                             random_state=SEED).fit(Xs).labels_


def _cluster(store, runner=None, **kwargs):
    from flows.pipeline import cluster_flow

    flow = cluster_flow if runner is None else cluster_flow.with_options(task_runner=runner)
    return flow(dataset="blobs", n_clusters=K, n_groups=M, random_state=SEED,
                store_url=store.url, n_anchors=ANCHORS, **kwargs)


def test_rerun_computes_nothing_and_labels_equal_the_library(prefect_api, registered, blobs):
    Xs, y = blobs
    first = _cluster(registered)
    assert (first["groups_computed"], first["groups_reused"]) == (M, 0)
    assert first["work"] == {"graphs_built": M, "row_batches_computed": 0,
                             "row_batches_reused": 0, "base_clusterings": M, "consensus": True}
    stages = {"read", "anchors", "search", "graph", "eigen", "kmeans", "consensus", "write"}
    assert stages <= set(first["stages"]) and all(t >= 0 for t in first["stages"].values())
    expected = _library(Xs)
    np.testing.assert_array_equal(_labels(registered, first), expected)
    assert first["scores"] == fastmice.metrics.clustering_scores(y, expected)

    assert first["group_work"] == {"built": M, "extended": 0, "reclustered": 0, "reused": 0}
    assert first["consensus_work"] == "computed"

    from pipeline.progress import listen

    seen = []
    with listen(seen.append):
        rerun = _cluster(registered)
    assert (rerun["groups_computed"], rerun["groups_reused"]) == (0, M)
    assert rerun["group_work"] == {"built": 0, "extended": 0, "reclustered": 0, "reused": M}
    assert rerun["consensus_work"] == "reused"
    assert [p.stage for p in seen] == ["view groups"] * (2 * M + 1) + [
        "consensus", "writing", "done"]
    counts = seen[2 * M]
    assert (counts.steps_done, counts.n_steps, counts.groups_done) == (2 * M, 2 * M, M)
    assert counts.groups == rerun["group_work"]
    assert rerun["work"] == {"graphs_built": 0, "row_batches_computed": 0,
                             "row_batches_reused": 0, "base_clusterings": 0, "consensus": False}
    np.testing.assert_array_equal(_labels(registered, rerun), expected)
    assert rerun["run_id"] != first["run_id"]
    record = registered.read_record(RUN, rerun["run_id"])
    assert record["dataset_fingerprint"] == DatasetStore(registered).manifest("blobs")[
        "fingerprint"]
    assert [g["computed"] for g in record["groups"]] == [False] * M


def test_serial_runner_gives_the_same_labels(prefect_api, registered, blobs):
    from prefect.task_runners import ThreadPoolTaskRunner

    summary = _cluster(registered, ThreadPoolTaskRunner(max_workers=1))
    np.testing.assert_array_equal(_labels(registered, summary), _library(blobs[0]))


def test_a_spectral_consensus_gives_the_library_s_labels(prefect_api, store):
    # 12 clusters of 10 samples: the best mode's spectral candidate wins (its labels, not the
    # cut's; fastmice._joint_spectral), through the flow as through the library.
    from benchmark_loader import load_benchmark

    families = load_benchmark("families")
    Xs, y = families.make_point(families.point(120, 12, 3, 0.25, True, seed=7001))
    register_batch(store, "small", [np.asarray(X) for X in Xs], y, mode="create")
    from flows.pipeline import cluster_flow

    summary = cluster_flow(dataset="small", n_clusters=12, n_groups=M, random_state=SEED,
                           store_url=store.url, n_anchors=ANCHORS)
    library = fastmice.FastMICE(12, n_groups=M, n_anchors=ANCHORS, mode="best",
                                random_state=SEED).fit(Xs)
    assert library.consensus_.source == "spectral"
    np.testing.assert_array_equal(_labels(store, summary), library.labels_)


def test_failed_group_fails_the_run_and_a_rerun_computes_only_it(prefect_api, registered,
                                                                 blobs, monkeypatch):
    from flows.pipeline import GroupsFailedError

    real = fastmice.cluster_group

    def broken(B, spec, init=None, **kwargs):
        if spec.group_index == 2:
            raise ValueError("injected failure")
        return real(B, spec, init, **kwargs)

    monkeypatch.setattr(fastmice, "cluster_group", broken)
    with pytest.raises(GroupsFailedError,
                       match=r"1 of 5 view groups failed: group 2 \(base-2: .*injected failure"):
        _cluster(registered)
    assert len(registered.list(BASE_LABELS)) == M - 1  # the others finished and are stored
    assert registered.list_records(RUN) == []

    monkeypatch.setattr(fastmice, "cluster_group", real)
    resumed = _cluster(registered)
    assert (resumed["groups_computed"], resumed["groups_reused"]) == (1, M - 1)
    assert resumed["work"]["graphs_built"] == 0 and resumed["work"]["base_clusterings"] == 1
    np.testing.assert_array_equal(_labels(registered, resumed), _library(blobs[0]))


def test_extend_computes_only_the_new_groups(prefect_api, registered, blobs, monkeypatch):
    import dataclasses

    from fastmice import _best
    from flows.pipeline import extend_flow

    # The consensus's labels, renumbered by the extension to match the first run's: on
    # these blobs the joint candidate (the same whatever the groups) ties with the
    # consensus and the tie rule would keep it in both runs, numbered alike.
    monkeypatch.setattr(_best, "CHOICES", dataclasses.replace(_best.CHOICES, joint_tie=0.0))
    first = _cluster(registered)
    extended = extend_flow(run_id=first["run_id"], n_groups=3, store_url=registered.url)
    assert extended["n_groups"] == M + 3 and extended["parent_run"] == first["run_id"]
    assert (extended["groups_computed"], extended["groups_reused"]) == (3, M)
    assert extended["work"]["graphs_built"] == 3 and extended["work"]["consensus"]
    assert extended["group_work"] == {"built": 3, "extended": 0, "reclustered": 0, "reused": M}
    library = _library(blobs[0], n_groups=M + 3)
    labels = _labels(registered, extended)
    np.testing.assert_array_equal(labels, _matched(registered, extended, library))
    assert fastmice.metrics.clustering_scores(library, labels)["nmi"] == 1.0
    assert np.mean(library == _labels(registered, first)) < 0.95  # as the fit numbers them
    assert extended["relabel"]["kept"] == _kept(registered, extended, first) >= 0.95
    record = registered.read_record(RUN, extended["run_id"])
    assert [g["computed"] for g in record["groups"]] == [False] * M + [True] * 3


def _reference_recluster(Xs_old, Xs_new, n_samples_anchor, warm=True):
    """The recluster composed from library calls: anchors from the old batch only; the base
    clusterings and the consensus refine the first run's (``warm``) or start anew."""
    params = fastmice.EnsembleParams(K, n_groups=M, n_anchors=ANCHORS, random_state=SEED,
                                     mode="best", metric="euclidean")  # the pipeline's mode
    seed = params.root_seed
    specs = fastmice.draw_view_groups([X.shape[1] for X in Xs_old], n_samples_anchor, params,
                                      seed=seed)
    base, first_base = [], []
    old_empty = fastmice.missing_rows(Xs_old, "best")
    new_empty = fastmice.missing_rows(Xs_new, "best")
    for spec in specs:
        B_old, anchors = fastmice.build_group_graph(Xs_old, spec, old_empty)
        B_new = fastmice.transform_group_graph(Xs_new, spec, anchors, new_empty)
        first = fastmice.cluster_group(B_old, spec, mode="best")
        first_base.append(first.labels_)
        base.append(fastmice.cluster_group(sp.vstack([B_old, B_new], format="csr"), spec,
                                           first if warm else None, mode="best").labels_)
    n_views = len(Xs_old)
    first = fastmice.consensus_with_joint(Xs_old, np.column_stack(first_base),
                                          params.for_data(n_samples_anchor, n_views))
    Xs_all = [np.vstack([a, b]) for a, b in zip(Xs_old, Xs_new, strict=True)]
    return fastmice.consensus_with_joint(Xs_all, np.column_stack(base),
                                         params.for_data(len(Xs_all[0]), n_views),
                                         init=first if warm else None).labels_


def test_recluster_after_append_places_only_the_new_batch(prefect_api, store, blobs,
                                                          split_batches):
    from flows.pipeline import recluster_flow

    Xs, y = blobs
    (X0, y0), (X1, y1) = split_batches(Xs, y, [500, 100])
    register_batch(store, "blobs", X0, y0, mode="create")
    first = _cluster(store)
    assert first["n_samples"] == 500
    register_batch(store, "blobs", X1, y1, mode="append")

    summary = recluster_flow(dataset="blobs", store_url=store.url)
    assert summary["n_samples"] == 600 and summary["parent_run"] == first["run_id"]
    assert summary["work"] == {"graphs_built": 0, "row_batches_computed": M,
                               "row_batches_reused": 0, "base_clusterings": M,
                               "consensus": True}
    assert summary["group_work"] == {"built": 0, "extended": M, "reclustered": 0, "reused": 0}
    assert summary["consensus_work"] == "refined"
    labels = _labels(store, summary)
    np.testing.assert_array_equal(labels, _reference_recluster(X0, X1, 500))
    assert summary["scores"]["nmi"] > 0.9
    record = store.read_record(RUN, summary["run_id"])
    assert record["batches"] == [0, 1] and record["anchor_batches"] == [0]

    again = recluster_flow(dataset="blobs", store_url=store.url)
    assert again["groups_computed"] == 0 and again["work"]["row_batches_reused"] == M
    np.testing.assert_array_equal(_labels(store, again), labels)

    anew = recluster_flow(dataset="blobs", store_url=store.url, from_scratch=True)
    assert anew["work"]["graphs_built"] == 0 and anew["work"]["base_clusterings"] == M
    assert anew["group_work"] == {"built": 0, "extended": 0, "reclustered": M, "reused": 0}
    assert anew["consensus_work"] == "computed"
    np.testing.assert_array_equal(_labels(store, anew), _matched(
        store, anew, _reference_recluster(X0, X1, 500, warm=False)))
    assert _kept(store, anew, summary) >= 0.95 and anew["relabel"]["shared_samples"] == 600

    refreshed = recluster_flow(dataset="blobs", store_url=store.url, refresh_anchors=True)
    assert refreshed["work"]["graphs_built"] == M
    assert refreshed["group_work"]["built"] == M
    union = [np.vstack([a, b]) for a, b in zip(X0, X1, strict=True)]
    np.testing.assert_array_equal(_labels(store, refreshed),
                                  _matched(store, refreshed, _library(union)))
    assert _kept(store, refreshed, anew) >= 0.95


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_labels(prefect_api, registered, blobs):
    from flows.runners import task_runner

    summary = _cluster(registered, task_runner(2, "local"))
    assert summary["groups_computed"] == M
    np.testing.assert_array_equal(_labels(registered, summary), _library(blobs[0]))


@pytest.mark.slow
def test_local_dask_workers_keep_glibc_malloc_thresholds_and_one_blas_thread(monkeypatch):
    # Dask's default MALLOC_TRIM_THRESHOLD_=65536 made every large array fault its pages in
    # anew: the pipeline on 2 worker processes took 1.5x its time on 2 threads.
    from distributed import Client

    from flows.runners import local_cluster

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    names = ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    with local_cluster(n_workers=1, threads_per_worker=1, processes=True,
                       dashboard_address=None) as cluster, Client(cluster) as client:
        seen = list(client.run(lambda: {n: os.environ.get(n) for n in names}).values())
    assert seen == [{"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": "1",
                     "OPENBLAS_NUM_THREADS": "1"}]
