"""Task bodies called through ``.fn`` on a temporary store: no Prefect API is started."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fastmice
from pipeline.ingest import register_batch
from pipeline.keys import CONSENSUS, GRAPH_ROWS, RUN, anchors_key, dataset_ref, rows_key
from pipeline.params import ensemble_params
from pipeline.runs import run_summary
from storage.datasets import DatasetStore
from tasks import consensus as consensus_tasks
from tasks import graphs, results, specs
from tasks._options import retry_on_io

N_GROUPS = 3


def _ensemble(n_samples, n_groups=N_GROUPS, seed=5):
    return ensemble_params(n_samples, 3, n_clusters=4, n_groups=n_groups, random_state=seed,
                           n_anchors=50, metric="euclidean")


def _params(n_samples, n_groups=N_GROUPS, seed=5):
    """What the tasks receive: the parameter object as a dict."""
    return _ensemble(n_samples, n_groups, seed).to_dict()


def _library_groups(Xs, params):
    """What FastMICE computes for the same data: specs, graphs and base labels."""
    ensemble = fastmice.EnsembleParams.from_dict(params)
    group_specs = fastmice.draw_view_groups(
        [X.shape[1] for X in Xs], Xs[0].shape[0], ensemble, seed=ensemble.root_seed)
    out = []
    for spec in group_specs:
        B, anchors = fastmice.build_group_graph(Xs, spec)
        out.append((spec, B, anchors, fastmice.cluster_group(B, spec).labels_))
    return out


@pytest.fixture
def two_batches(store, blobs, split_batches):
    """Dataset "two" with batches of 450 and 150 samples."""
    Xs, y = blobs
    (X0, y0), (X1, y1) = split_batches(Xs, y, [450, 150])
    register_batch(store, "two", X0, y0, mode="create")
    manifest, _ = register_batch(store, "two", X1, y1, mode="append")
    return manifest, X0, X1


def test_draw_groups_matches_library_and_stores_the_specs(registered):
    manifest = DatasetStore(registered).manifest("blobs")
    data = dataset_ref(manifest)
    params = _params(data["n_samples"])
    drawn = specs.draw_groups.fn(registered.url, data, params, 0, N_GROUPS)
    ensemble = _ensemble(600)
    expected = fastmice.draw_view_groups([20, 30, 40], 600, ensemble, seed=ensemble.root_seed)
    assert drawn == [s.to_dict() for s in expected]
    assert registered.list("view-groups")


def test_group_tasks_reproduce_the_library_and_skip_stored_work(registered, blobs):
    Xs, _ = blobs
    url = registered.url
    data = dataset_ref(DatasetStore(registered).manifest("blobs"))
    params = _params(data["n_samples"])
    drawn = specs.draw_groups.fn(url, data, params, 0, N_GROUPS)
    expected = _library_groups(Xs, params)

    bases = []
    for spec, (_, B, _, labels) in zip(drawn, expected, strict=True):
        graph = graphs.build_graph.fn(url, data, params, spec)
        assert graph["computed"] and set(graph["rows"]) == {"0"}
        stored = registered.get(graph["rows"]["0"])
        assert (stored != B).nnz == 0
        base = consensus_tasks.base_cluster.fn(url, data, data, params, spec, graph, [])
        assert base["computed"]
        np.testing.assert_array_equal(registered.get(base["labels"]), labels)
        bases.append(base)
        # A second call finds everything stored and computes nothing.
        assert not graphs.build_graph.fn(url, data, params, spec)["computed"]
        again = consensus_tasks.base_cluster.fn(url, data, data, params, spec, graph, [])
        assert not again["computed"]

    result = consensus_tasks.consensus.fn(url, bases, params, None, data, data)
    library = fastmice.FastMICE(4, n_groups=N_GROUPS, n_anchors=50, mode=params["mode"],
                                random_state=params["random_state"]).fit(Xs)
    np.testing.assert_array_equal(registered.get(result["consensus"])["labels"],
                                  library.labels_)
    assert not consensus_tasks.consensus.fn(url, bases, params, None, data, data)["computed"]


def test_graph_rows_are_stored_per_batch_and_new_batches_are_placed(store, two_batches):
    manifest, X0, X1 = two_batches
    url = store.url
    anchor_data, data = dataset_ref(manifest, [0]), dataset_ref(manifest)
    params = _params(450)
    spec = specs.draw_groups.fn(url, anchor_data, params, 0, 1)[0]
    graph = graphs.build_graph.fn(url, anchor_data, params, spec)
    assert list(graph["rows"]) == ["0"]
    batch = data["batches"][1]
    placed = graphs.transform_graph.fn(url, anchor_data, params, spec, batch, graph)
    assert placed["computed"] and placed["batch_id"] == 1
    assert not graphs.transform_graph.fn(url, anchor_data, params, spec, batch, graph)["computed"]

    # The rows equal the library's: the graph on batch 0, the new batch placed with its anchors.
    spec_obj = fastmice.ViewGroupSpec.from_dict(spec)
    B0, anchors = fastmice.build_group_graph(X0, spec_obj)
    B1 = fastmice.transform_group_graph(X1, spec_obj, anchors)
    assert (store.get(graph["rows"]["0"]) != B0).nnz == 0
    assert (store.get(placed["rows"]) != B1).nnz == 0
    # On training samples, transform gives exactly the built rows (the library's contract
    # that makes per-batch rows reusable).
    assert (fastmice.transform_group_graph(X0, spec_obj, anchors) != B0).nnz == 0

    base = consensus_tasks.base_cluster.fn(url, anchor_data, data, params, spec, graph, [placed])
    expected = fastmice.cluster_group(sp.vstack([B0, B1], format="csr"), spec_obj).labels_
    np.testing.assert_array_equal(store.get(base["labels"]), expected)


def test_graph_over_two_anchor_batches_is_split_by_batch(store, two_batches):
    manifest, X0, X1 = two_batches
    data = dataset_ref(manifest)
    params = _params(600)
    spec = specs.draw_groups.fn(store.url, data, params, 0, 1)[0]
    graph = graphs.build_graph.fn(store.url, data, params, spec)
    B, _ = fastmice.build_group_graph([np.vstack([a, b]) for a, b in zip(X0, X1, strict=True)],
                                      fastmice.ViewGroupSpec.from_dict(spec))
    pieces = [store.get(graph["rows"][b]) for b in ("0", "1")]
    assert [p.shape[0] for p in pieces] == [450, 150]
    assert (sp.vstack(pieces, format="csr") != B).nnz == 0


def test_base_cluster_names_a_batch_without_rows(registered):
    data = dataset_ref(DatasetStore(registered).manifest("blobs"))
    params = _params(600)
    spec = specs.draw_groups.fn(registered.url, data, params, 0, 1)[0]
    graph = {"group": 0, "anchors": None, "rows": {}}
    with pytest.raises(ValueError, match=r"Group 0 has no graph rows for batches \[0\]"):
        consensus_tasks.base_cluster.fn(registered.url, data, data, params, spec, graph, [])


def test_a_corrupt_artifact_is_recomputed(registered):
    data = dataset_ref(DatasetStore(registered).manifest("blobs"))
    params = _params(600)
    spec = specs.draw_groups.fn(registered.url, data, params, 0, 1)[0]
    graph = graphs.build_graph.fn(registered.url, data, params, spec)
    path = registered.local_path(graph["rows"]["0"])
    path.write_bytes(path.read_bytes()[:-10])  # truncated on disk
    again = graphs.build_graph.fn(registered.url, data, params, spec)
    assert again["computed"]
    assert registered.exists(GRAPH_ROWS, graph["rows"]["0"]["key"])


def test_write_results_writes_labels_scores_and_the_run_record(registered, blobs):
    _, y = blobs
    data = dataset_ref(DatasetStore(registered).manifest("blobs"))
    labels = y[::-1].copy()
    consensus = registered.put(CONSENSUS, "c" * 64, {"labels": labels}).to_dict()
    run = {"run_id": "blobs-run", "n_clusters": 4, "params": {"random_state": 0},
           "root_seed": 7, "consensus": consensus, "started_unix": 0.0}
    record = results.write_results.fn(registered.url, run, data)
    assert registered.read_record(RUN, "blobs-run") == record
    table = registered.get(record["labels"])
    np.testing.assert_array_equal(table.column("sample_id").to_numpy(), np.arange(600))
    np.testing.assert_array_equal(table.column("label").to_numpy(), labels)
    assert record["scores"] == fastmice.metrics.clustering_scores(y, labels)
    assert record["cluster_sizes"] == np.bincount(labels).tolist()
    assert record["labels_path"].endswith("data.parquet")
    metadata = table.schema.metadata[b"fastmice"].decode()
    assert '"random_state": 0' in metadata and '"root_seed": 7' in metadata


def test_write_results_without_ground_truth_has_no_scores(store, blobs):
    Xs, _ = blobs
    register_batch(store, "nolabels", Xs, None, mode="create")
    data = dataset_ref(DatasetStore(store).manifest("nolabels"))
    consensus = store.put(CONSENSUS, "d" * 64, {"labels": np.zeros(600, dtype=np.int64)})
    run = {"run_id": "r1", "n_clusters": 2, "params": {"random_state": 0}, "root_seed": 1,
           "consensus": consensus.to_dict(), "started_unix": 0.0}
    record = results.write_results.fn(store.url, run, data)
    assert record["scores"] is None
    assert "scores" not in run_summary(record)


@pytest.mark.parametrize(("dataset", "expected"), [
    ("Hdigit", "fastmice-hdigit-scores"),
    ("my_data.v2", "fastmice-my-data-v2-scores"),
])
def test_artifact_keys_are_lowercase_dashes(dataset, expected):
    assert results.artifact_key(dataset, "scores") == expected


def test_prefect_keeps_no_result_cache():
    # The store is the only reuse mechanism: no task has a Prefect cache policy.
    from prefect.cache_policies import NO_CACHE

    every = [specs.draw_groups, graphs.build_graph, graphs.transform_graph,
             consensus_tasks.base_cluster, consensus_tasks.consensus, results.write_results,
             results.report_run, results.report_artifact]
    assert all(task.cache_policy is NO_CACHE for task in every)


@pytest.mark.parametrize(("error", "retried"), [
    (OSError("disk hiccup"), True),
    (ValueError("bad value"), False),
])
def test_only_io_errors_are_retried(error, retried):
    from prefect.states import Failed

    assert retry_on_io(None, None, Failed(data=error)) is retried


def test_keys_change_with_what_they_depend_on(registered):
    manifest = DatasetStore(registered).manifest("blobs")
    data = dataset_ref(manifest)
    params = _ensemble(600)
    spec = specs.draw_groups.fn(registered.url, data, params.to_dict(), 0, 2)
    assert anchors_key(data, params, spec[0]) != anchors_key(data, params, spec[1])
    assert anchors_key(data, params, spec[0]) == \
        anchors_key(dataset_ref(manifest, [0]), params, spec[0])
    assert rows_key("a" * 64, "b") != rows_key("a" * 64, "c")
    with pytest.raises(ValueError, match=r"Dataset 'blobs' has no batch \[3\]"):
        dataset_ref(manifest, [3])


def test_the_task_runner_is_sized_by_n_jobs():
    from flows.runners import task_runner

    assert task_runner()._max_workers == 2 and task_runner(3)._max_workers == 3
