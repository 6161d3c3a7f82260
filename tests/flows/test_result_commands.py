"""``fastmice export`` and ``fastmice label`` on a run made with string sample ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import adjusted_rand_score

from cli.main import main
from fastmice._auto_k_graph import JOINT_RULE
from pipeline.keys import RUN
from storage import open_store

pytestmark = pytest.mark.flows

ROOT = Path(__file__).resolve().parents[2]
K, M, ANCHORS, SEED = 4, 6, 80, 1


def _table(ids, X, prefix):
    return pa.table({"doc": ids, **{f"{prefix}{j}": X[:, j] for j in range(X.shape[1])}})


def _env(api_url=None):
    env = {k: v for k, v in os.environ.items() if k not in ("FASTMICE_STORE", "FASTMICE_DEBUG")}
    env["PYTHONPATH"] = str(ROOT)
    if api_url is not None:
        env["PREFECT_API_URL"] = api_url
    return env


def _cli(args, api_url=None, code=None):
    """Run ``python -c code`` (default ``-m cli``) with ``args``; the completed process."""
    command = [sys.executable, "-m", "cli"] if code is None else [sys.executable, "-c", code]
    return subprocess.run([*command, *map(str, args)], cwd=ROOT, env=_env(api_url),
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def clustered(prefect_api, tmp_path_factory, blobs):
    """Run ``r`` of three views (2 Parquet, 1 CSV) with string ids, in three row orders."""
    Xs, y = blobs
    d = tmp_path_factory.mktemp("results")
    ids = np.array([f"doc-{i:05d}" for i in range(len(y))])
    rng = np.random.default_rng(0)
    paths = []
    for v, X in enumerate(Xs):
        order = np.arange(len(y)) if v == 0 else rng.permutation(len(y))
        path = d / (f"v{v}.csv" if v == 2 else f"v{v}.parquet")
        table = _table(ids[order], X[order], f"v{v}_")
        if v == 2:
            pacsv.write_csv(table, path)
        else:
            pq.write_table(table, path)
        paths.append(path)
    store_dir = d / "store"
    done = _cli(["cluster", *paths, "--id-column", "doc", "--name", "docs", "--k", K,
                 "--groups", M, "--anchors", ANCHORS, "--seed", SEED, "--run-name", "r",
                 "--store", store_dir, "--json"], prefect_api)
    assert done.returncode == 0, done.stderr[-2000:]
    return {"dir": d, "paths": paths, "ids": ids, "Xs": Xs, "y": y, "store_dir": store_dir,
            "summary": json.loads(done.stdout)}


def _labels_of_run(clustered):
    store = open_store(clustered["store_dir"])
    table = store.get(store.read_record(RUN, "r")["labels"])
    return table.column("sample_id").to_numpy(zero_copy_only=False).astype(str), \
        table.column("label").to_numpy()


def test_the_run_carries_the_ids_and_clusters_well(clustered):
    ids, labels = _labels_of_run(clustered)
    np.testing.assert_array_equal(ids, clustered["ids"])
    # Aligned by id: the labels agree with the truth (misaligned views would not).
    assert adjusted_rand_score(clustered["y"], labels) > 0.9
    assert "scores" not in clustered["summary"]  # per-view files carry no labels


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".npy"])
def test_export_writes_ids_and_labels(clustered, suffix, cli_env, capfd):
    out = clustered["dir"] / f"export{suffix}"
    assert main(["export", "r", "--out", str(out), "--store", str(clustered["store_dir"]),
                 "--json"]) == 0
    summary = json.loads(capfd.readouterr().out)
    assert (summary["n_samples"], summary["id_kind"], summary["path"]) == \
        (len(clustered["ids"]), "str", str(out))
    if suffix == ".npy":
        records = np.load(out, allow_pickle=False)
        ids, labels = records["sample_id"], records["label"]
    else:
        table = pq.read_table(out) if suffix == ".parquet" else pacsv.read_csv(out)
        ids = np.asarray(table.column("sample_id").to_pylist())
        labels = table.column("label").to_numpy()
    run_ids, run_labels = _labels_of_run(clustered)
    np.testing.assert_array_equal(ids, run_ids)
    np.testing.assert_array_equal(labels, run_labels)


def test_export_refuses_a_bad_out_in_one_line(clustered, cli_env, capfd):
    assert main(["export", "r", "--out", str(clustered["dir"] / "x.txt"),
                 "--store", str(clustered["store_dir"])]) == 1
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ".parquet, .csv, .npy" in err[0]


def test_label_agrees_with_the_run_on_its_rows_and_changes_nothing(clustered, file_tree,
                                                                   cli_env, capfd):
    before = file_tree(clustered["store_dir"])
    record = open_store(clustered["store_dir"]).read_record(RUN, "r")
    out = clustered["dir"] / "new.parquet"
    # The views in another file order than registered would be refused; same order here,
    # rows in each file's own order (aligned by id again).
    assert main(["label", "r", *map(str, clustered["paths"]), "--id-column", "doc",
                 "--out", str(out), "--store", str(clustered["store_dir"]), "--json"]) == 0
    summary = json.loads(capfd.readouterr().out)
    table = pq.read_table(out)
    ids = np.asarray(table.column("sample_id").to_pylist())
    np.testing.assert_array_equal(ids, clustered["ids"])
    _, run_labels = _labels_of_run(clustered)
    ari = adjusted_rand_score(run_labels, table.column("label").to_numpy())
    assert ari >= 0.9, ari
    assert sum(summary["cluster_sizes"]) == len(ids)
    assert file_tree(clustered["store_dir"]) == before
    assert open_store(clustered["store_dir"]).read_record(RUN, "r") == record


def test_label_prints_csv_without_out(clustered, cli_env, capfd):
    paths = []
    for v, X in enumerate(clustered["Xs"]):
        paths.append(clustered["dir"] / f"five{v}.parquet")
        pq.write_table(_table(clustered["ids"][:5], X[:5], f"v{v}_"), paths[-1])
    assert main(["label", "r", *map(str, paths), "--id-column", "doc",
                 "--store", str(clustered["store_dir"])]) == 0
    lines = capfd.readouterr().out.splitlines()
    assert lines[0] == "sample_id,label" and len(lines) == 6
    assert [line.split(",")[0] for line in lines[1:]] == clustered["ids"][:5].tolist()


def test_label_refuses_data_unlike_the_runs_views(clustered, cli_env, capfd):
    Xs = clustered["Xs"]
    d = clustered["dir"]
    for v, X in enumerate(Xs):
        np.save(d / f"bad{v}.npy", X[:10])
    np.save(d / "narrow.npy", Xs[1][:10, :5])
    store = ["--store", str(clustered["store_dir"])]
    cases = [
        ([d / "bad0.npy", d / "bad1.npy"], "The new data have 2 view(s); run r has 3"),
        ([d / "bad0.npy", d / "narrow.npy", d / "bad2.npy"],
         "View 1 of the new data has 5 features; view 1 of run r has"),
        ([d / "bad0.npy", d / "bad1.npy", d / "bad2.npy", "--metric", "cosine"],
         "--metric cosine: run r compares its views with euclidean"),
    ]
    for argv, expected in cases:
        assert main(["label", "r", *map(str, argv), *store]) == 1
        err = capfd.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0], err
    assert main(["label", "nope", *map(str, cases[0][0]), *store]) == 1
    assert "Unknown run 'nope'" in capfd.readouterr().err


NO_PREFECT = """
import sys
from cli.main import main
status = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("prefect", "tasks", "flows"))
assert not loaded, loaded
sys.exit(status)
"""


def test_export_and_label_never_import_prefect(clustered):
    d, store = clustered["dir"], clustered["store_dir"]
    for argv in (["export", "r", "--out", d / "np.npy"],
                 ["label", "r", *clustered["paths"], "--id-column", "doc", "--out",
                  d / "np.csv"]):
        done = _cli([*argv, "--store", store], code=NO_PREFECT)
        assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("command", ["export", "label"])
def test_the_result_commands_have_help(command, capfd):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert f"usage: fastmice {command}" in capfd.readouterr().out


def test_k_auto_through_the_command_line(prefect_api, tmp_path, blobs):
    """No --k and no labels: k is chosen, printed with its candidates and kept in the record;
    the labels are the library's with n_clusters="auto"."""
    import fastmice
    from pipeline.ingest import save_views_dir

    Xs, _ = blobs
    save_views_dir(tmp_path / "nolabels", Xs)
    store_dir = tmp_path / "store"
    common = ["--groups", M, "--anchors", ANCHORS, "--seed", SEED, "--store", store_dir]
    done = _cli(["cluster", tmp_path / "nolabels", "--run-name", "auto", *common], prefect_api)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "-nearest-neighbour graph of the joint space" in done.stdout  # the best mode's
    assert "times ln(k)^0.5; best first (k, score): 4 (" in done.stdout
    assert "k auto     chose 4 of " in done.stdout
    store = open_store(store_dir)
    record = store.read_record(RUN, "auto")
    assert record["params"]["n_clusters"] == "auto" and record["n_clusters"] == 4
    assert record["k_candidates"][0][0] == 4 and len(record["k_candidates"]) >= 10
    assert record["k_rule"] == JOINT_RULE
    model = fastmice.FastMICE("auto", n_groups=M, n_anchors=ANCHORS, random_state=SEED,
                              mode="best").fit(Xs)  # the command line's mode
    labels = store.get(record["labels"]).column("label").to_numpy()
    np.testing.assert_array_equal(labels, model.labels_)
    assert model.k_candidates_ == [tuple(pair) for pair in record["k_candidates"]]
    from pipeline.report import build_report  # the report draws the score against k

    report = build_report(store, "auto", full=False)
    section = next(s for s in report.sections if s.title == "Choosing k")
    assert section.figure.startswith("<svg") and section.table[1][0] == "4"
    assert JOINT_RULE in section.caption
    # The same command again reuses everything (the keys hold "auto", a content key).
    again = _cli(["cluster", tmp_path / "nolabels", "--k", "auto", "--json", *common],
                 prefect_api)
    summary = json.loads(again.stdout)
    assert (summary["groups_computed"], summary["n_clusters"]) == (0, 4)
    assert summary["k_candidates"] == record["k_candidates"]
    assert summary["k_rule"] == JOINT_RULE
    # label works on an auto run too.
    out = tmp_path / "l.npy"
    assert _cli(["label", "auto", tmp_path / "nolabels", "--out", out, "--store",
                 store_dir]).returncode == 0
    assert adjusted_rand_score(labels, np.load(out)["label"]) >= 0.9
