"""Reading and registering data, the parameter object, run plans and ids (no Prefect)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import scipy.io

import fastmice
from pipeline.ingest import default_dataset_name, read_data, register_batch
from pipeline.keys import RUN
from pipeline.params import ensemble_params, params_of
from pipeline.plans import plan_cluster, plan_extend, plan_recluster
from pipeline.runs import list_runs, new_run_id
from storage import ArtifactNotFoundError
from storage.datasets import DatasetStore


@pytest.fixture
def views():
    rng = np.random.default_rng(0)
    return [rng.random((30, 4)), rng.random((30, 6))], np.arange(30) % 3


def _assert_same(Xs, expected):
    assert len(Xs) == len(expected)
    for X, E in zip(Xs, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(X), E)


def test_read_npz_in_the_shared_layout(tmp_path, views):
    Xs, y = views
    np.savez(tmp_path / "d.npz", view0=Xs[0], view1=Xs[1], labels=y)
    got, labels = read_data([tmp_path / "d.npz"])
    _assert_same(got, Xs)
    np.testing.assert_array_equal(labels, y)


def test_read_mat(tmp_path, views):
    Xs, y = views
    cell = np.empty((1, 2), dtype=object)
    cell[0, 0], cell[0, 1] = Xs
    scipy.io.savemat(tmp_path / "d.mat", {"X": cell, "Y": y[:, None]})
    got, labels = read_data([tmp_path / "d.mat"])
    _assert_same(got, Xs)
    np.testing.assert_array_equal(labels, y)


def test_read_one_file_per_view_and_a_directory(tmp_path, views):
    Xs, y = views
    np.save(tmp_path / "a.npy", Xs[0])
    np.savetxt(tmp_path / "b.csv", Xs[1], delimiter=",")
    got, labels = read_data([tmp_path / "a.npy", tmp_path / "b.csv"])
    _assert_same(got, Xs)
    assert labels is None
    folder = tmp_path / "dir"
    folder.mkdir()
    for v, X in enumerate(Xs):
        np.save(folder / f"view{v}.npy", X)
    np.save(folder / "labels.npy", y)
    got, labels = read_data([folder])
    _assert_same(got, Xs)
    np.testing.assert_array_equal(labels, y)


def test_integer_views_are_validated_to_float(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(12).reshape(6, 2))
    (X,), _ = read_data([tmp_path / "a.npy"])
    assert X.dtype == np.float64


@pytest.mark.parametrize(("make", "match"), [
    (lambda d: [d / "missing.npz"], "No such file or directory"),
    (lambda d: [d / "garbage.npz"], "is not an .npz archive"),
    (lambda d: [d / "nolayout.npz"], "has no arrays named view0"),
    (lambda d: [d / "a.npy", d / "short.npy"], "rows|samples"),
    (lambda d: [d / "notes.txt"], r"expected one \.npz, one \.mat"),
    (lambda d: [d / "a.npy", d / "garbage.npz"], r"expected one \.npz, one \.mat"),
    (lambda d: [], "No data given"),
    (lambda d: [d / "nan.npy"], "NaN or infinite"),
])
def test_read_errors_name_the_problem(tmp_path, make, match):
    (tmp_path / "garbage.npz").write_bytes(b"not a zip file")
    np.savez(tmp_path / "nolayout.npz", x=np.ones((3, 2)))
    np.save(tmp_path / "a.npy", np.ones((5, 2)))
    np.save(tmp_path / "short.npy", np.ones((4, 2)))
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises((ValueError, FileNotFoundError), match=match):
        read_data(make(tmp_path))


@pytest.mark.parametrize(("paths", "expected"), [
    (["../shared/datasets/Hdigit.npz"], "Hdigit"),
    (["some dir/my data (v2).npz"], "my-data-v2"),
])
def test_default_dataset_name(paths, expected):
    assert default_dataset_name(paths) == expected


def test_default_dataset_name_of_a_folder_and_of_view_files(tmp_path):
    (tmp_path / "cams").mkdir()
    assert default_dataset_name([tmp_path / "cams"]) == "cams"
    assert default_dataset_name([tmp_path / "cams" / "v0.npy", tmp_path / "cams" / "v1.npy"]) \
        == "cams"
    with pytest.raises(ValueError, match="pass one with --name"):
        default_dataset_name(["/tmp/___.npz"])


def test_register_create_is_idempotent_and_refuses_other_data(store, views):
    Xs, y = views
    manifest, written = register_batch(store, "d", Xs, y, mode="create")
    assert written and manifest["n_samples"] == 30
    again, written = register_batch(store, "d", Xs, y, mode="create")
    assert not written and again["fingerprint"] == manifest["fingerprint"]
    with pytest.raises(ValueError, match=r"already exists .* with other data"):
        register_batch(store, "d", [X[:20] for X in Xs], y[:20], mode="create")


def test_cluster_of_the_first_batch_after_append_says_how_to_cluster_it_again(store, views):
    from pipeline.ingest.read import DatasetExistsError

    Xs, y = views
    register_batch(store, "d", [X[:20] for X in Xs], y[:20], mode="create")
    register_batch(store, "d", [X[20:] for X in Xs], y[20:], mode="append")
    with pytest.raises(DatasetExistsError, match=r"already exists .* with other data") as info:
        register_batch(store, "d", [X[:20] for X in Xs], y[:20], mode="create")
    text = info.value.render("first.npz")
    assert "these data are its first batch" in text
    assert "`fastmice cluster first.npz --name d-original` clusters these data alone" in text
    assert "`fastmice recluster d`" in text


def test_register_append_adds_a_batch_once(store, views):
    Xs, y = views
    register_batch(store, "d", [X[:20] for X in Xs], y[:20], mode="create")
    manifest, written = register_batch(store, "d", [X[20:] for X in Xs], y[20:], mode="append")
    assert written and [b["n_samples"] for b in manifest["batches"]] == [20, 10]
    again, written = register_batch(store, "d", [X[20:] for X in Xs], y[20:], mode="append")
    assert not written and len(again["batches"]) == 2
    np.testing.assert_array_equal(DatasetStore(store).load_ids("d"), np.arange(30))


def test_register_append_errors(store, views):
    Xs, y = views
    with pytest.raises(ArtifactNotFoundError, match="Unknown dataset 'd'"):
        register_batch(store, "d", Xs, y, mode="append")
    register_batch(store, "d", Xs, y, mode="create")
    with pytest.raises(ValueError, match="View 1 of the new batch has 5 features"):
        register_batch(store, "d", [Xs[0], Xs[1][:, :5]], y, mode="append")
    with pytest.raises(ValueError, match="has 1 views"):
        register_batch(store, "d", [Xs[0]], y, mode="append")
    with pytest.raises(ValueError, match="mode='replace' is not valid"):
        register_batch(store, "d", Xs, y, mode="replace")


@pytest.mark.parametrize(("change", "error", "match"), [
    ({"n_clusters": 1}, ValueError, r"n_clusters=1 must be >= 2"),
    ({"n_clusters": 31}, ValueError, r"n_clusters=31 must be <= n_samples=30"),
    ({"n_clusters": 2.5}, TypeError, r"n_clusters must be an int; got 2.5"),
    ({"n_groups": 0}, ValueError, r"n_groups=0 must be >= 1"),
    ({"random_state": -1}, ValueError, r"random_state=-1 must be in \[0, 2\*\*32\)"),
    ({"random_state": 1.5}, TypeError, r"random_state must be None, an int"),
    ({"random_state": np.random.default_rng(0)}, TypeError,
     r"random_state must be an int to be stored; got Generator"),
    ({"n_jobs": 0}, ValueError, r"n_jobs=0 is not allowed"),
    ({"base_clusters": (0.1, 2)}, ValueError, r"base_clusters=\(0.1, 2\) gives base"),
    ({"n_neighbours": 3}, TypeError, r"Unknown parameters \['n_neighbours'\]"),
    ({"metric": "manhattan"}, ValueError, r"Unknown metric 'manhattan'"),
    ({"metric": ["cosine"]}, ValueError, r"metric has 1 entries; expected one per view \(2\)"),
    ({"n_anchors": 0}, ValueError, r"n_anchors=0 must be >= 1"),
    ({"feature_ratio": (0.8, 0.2)}, ValueError, r"feature_ratio=\(0.8, 0.2\) must satisfy"),
    ({"metric": "euclidean,l1"}, ValueError, r"Unknown metric 'l1' for view 1"),
])
def test_ensemble_params_errors(change, error, match):
    kwargs = {"n_clusters": 3, "n_groups": 4, "random_state": 0}
    with pytest.raises(error, match=match):
        ensemble_params(30, 2, **{**kwargs, **change})


def test_ensemble_params_normalises_metrics_and_resolves_the_seed():
    params = ensemble_params(30, 2, n_clusters=3, n_groups=4, random_state=7,
                             metric="euclidean,cosine", n_anchors=None)
    assert params.metric == ("euclidean", "cosine") and params.n_anchors == 1000
    assert params.root_seed == fastmice.resolve_seed(7) and params.random_state == 7
    # An unseeded pipeline run is reproducible: it gets the pipeline's fixed seed.
    assert ensemble_params(30, 2, n_clusters=3).random_state == 0


def _fake_run(store, run_id, dataset, created, **extra):
    record = {"run_id": run_id, "dataset": dataset, "created": created, **extra}
    store.write_record(RUN, run_id, record)
    return record


def test_plans_of_the_three_kinds(registered):
    plan = plan_cluster(registered, "blobs", n_clusters=4, n_groups=3, random_state=1)
    assert plan.kind == "cluster" and plan.anchor_data == plan.data and not plan.later_batches
    _fake_run(registered, "r1", "blobs", "2026-01-01T00:00:00", params=plan.params.to_dict(),
              batches=[0], anchor_batches=[0], dataset_fingerprint=plan.data["fingerprint"])
    extended = plan_extend(registered, "r1", 2, n_jobs=3)
    assert extended.params.n_groups == 5 and extended.parent_run == "r1"
    assert extended.params.n_jobs == 3 and extended.params.random_state == 1
    again = plan_recluster(registered, "blobs")
    assert again.params == plan.params and again.parent_run == "r1"


def test_a_recluster_is_warm_only_over_the_runs_samples_followed_by_new_ones(registered,
                                                                            blobs):
    Xs, y = blobs
    register_batch(registered, "blobs", [X[:40] + 1.0 for X in Xs], y[:40], mode="append")
    plan = plan_cluster(registered, "blobs", n_clusters=4, n_groups=3, random_state=1)
    partitions = {"consensus": {"kind": "consensus", "key": "c"},
                  "groups": [{"group": g, "partition": {"key": f"p{g}"}} for g in range(3)]}
    _fake_run(registered, "r1", "blobs", "2026-01-01T00:00:00", params=plan.params.to_dict(),
              batches=[0], anchor_batches=[0], **partitions)
    warm = plan_recluster(registered, "blobs")
    assert warm.warm_start["run"] == "r1" and warm.warm_partition(2) == {"key": "p2"}
    # A run over the later batch only: its samples are not the first ones, so anew.
    _fake_run(registered, "r2", "blobs", "2026-01-02T00:00:00", params=plan.params.to_dict(),
              batches=[1], anchor_batches=[1], **partitions)
    anew = plan_recluster(registered, "blobs")
    assert anew.parent_run == "r2" and anew.warm_start is None


def test_records_written_before_the_parameter_object_still_plan(registered):
    plan = plan_cluster(registered, "blobs", n_clusters=4, n_groups=3, random_state=1)
    old = {k: v for k, v in plan.params.to_dict().items() if k != "n_jobs"}
    old["seed"] = plan.params.root_seed  # the root seed, once stored under this name
    # Such a record did not say its workers (execution-only): everything else is the same.
    assert params_of({"params": old}) == dataclasses.replace(plan.params, n_jobs=None)


def test_plan_errors(registered):
    with pytest.raises(ArtifactNotFoundError, match="No dataset 'other'"):
        plan_cluster(registered, "other", n_clusters=4)
    with pytest.raises(ValueError, match="n_clusters=601 must be <="):
        plan_cluster(registered, "blobs", n_clusters=601)
    with pytest.raises(ArtifactNotFoundError, match=r"Unknown run 'nope'.*fastmice runs"):
        plan_extend(registered, "nope", 2)
    with pytest.raises(ValueError, match="n_groups=0 must be >= 1"):
        plan_extend(registered, "nope", 0)
    with pytest.raises(ValueError, match=r"has no run yet.*fastmice cluster"):
        plan_recluster(registered, "blobs")


def test_run_ids_are_readable_unique_and_named_runs_are_new(store):
    first, second = new_run_id(store, "Hdigit"), new_run_id(store, "Hdigit")
    assert re.fullmatch(r"Hdigit-\d{8}-\d{6}-[0-9a-f]{6}", first) and first != second
    assert new_run_id(store, "Hdigit", "mine") == "mine"
    _fake_run(store, "mine", "Hdigit", "2026-01-01T00:00:00")
    with pytest.raises(ValueError, match="A run named 'mine' already exists"):
        new_run_id(store, "Hdigit", "mine")


def test_list_runs_filters_and_sorts(store):
    _fake_run(store, "b", "x", "2026-01-02T00:00:00")
    _fake_run(store, "a", "x", "2026-01-03T00:00:00")
    _fake_run(store, "c", "y", "2026-01-01T00:00:00")
    assert [r["run_id"] for r in list_runs(store)] == ["c", "b", "a"]
    assert [r["run_id"] for r in list_runs(store, "x")] == ["b", "a"]
