"""The ``fastmice`` command: errors, ``--json`` output, and a resume after SIGKILL."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import fastmice
from cli.main import main
from pipeline.ingest import save_views_dir
from pipeline.keys import BASE_LABELS, RUN
from storage import open_store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def files(tmp_path, blobs):
    """Data files, good and bad, in tmp_path/files."""
    Xs, y = blobs
    d = tmp_path / "files"
    save_views_dir(d / "blobs", Xs, y)
    np.savez(d / "blobs.npz", view0=Xs[0], view1=Xs[1], view2=Xs[2], labels=y)
    np.savez(d / "nolabels.npz", view0=Xs[0], view1=Xs[1])
    np.savez(d / "nolayout.npz", data=Xs[0])
    (d / "garbage.npz").write_bytes(b"\x00 not an npz")
    np.save(d / "a.npy", Xs[0])
    np.save(d / "short.npy", Xs[1][:500])
    np.save(d / "narrow.npy", Xs[1][:, :7])
    save_views_dir(d / "nanviews", Xs, y)
    with_nan = Xs[1].copy()
    with_nan[3, 2] = np.nan
    np.save(d / "nanviews" / "view1.npy", with_nan)
    return d


@pytest.fixture
def populated(registered, tmp_path, blobs):
    """A store holding dataset "blobs" and a (fake) run record."""
    registered.write_record(RUN, "blobs-old", {"run_id": "blobs-old", "dataset": "blobs",
                                               "created": "2026-01-01T00:00:00"})
    return registered


ERRORS = [
    (["cluster", "{f}/missing.npz"], "No such file or directory"),
    (["cluster", "{f}/garbage.npz"], "is not an .npz archive"),
    (["cluster", "{f}/nolayout.npz"], "has no arrays named view0"),
    (["cluster", "{f}/a.npy", "{f}/short.npy", "--k", "4"], "500"),
    (["cluster", "{f}/blobs.npz", "--k", "1"], r"--k 1 must be >= 2"),
    (["cluster", "{f}/blobs.npz", "--groups", "0"], r"--groups 0 must be >= 1"),
    (["cluster", "{f}/blobs.npz", "--metric", "manhattan"], "metric 'manhattan'"),
    (["cluster", "{f}/blobs.npz", "--seed", "-3"], r"--random-state -3 must be in"),
    (["cluster", "{f}/blobs.npz", "--feature-ratio", "0.5,1.5"],
     r"--feature-ratio \[0.5, 1.5\] must satisfy"),
    (["cluster", "{f}/blobs.npz", "--base-clusters", "0.1,2"], r"--base-clusters .* gives base"),
    (["cluster", "{f}/blobs.npz", "--n-jobs", "0"], r"--n-jobs 0 is not allowed"),
    (["cluster", "{f}/blobs.npz", "--memory-limit", "1M"],
     r"needs about .* GB is the limit \(--memory-limit\);.* Nothing was written\.$"),
    (["cluster", "{f}/blobs.npz", "--memory-limit", "lots"], "memory size 'lots' is not a size"),
    # Views on disk: the run is refused for its size before any value is read (the NaN of
    # view 1 is not reached); with room enough, the NaN is.
    (["cluster", "{f}/nanviews", "--k", "4", "--memory-limit", "1M"],
     r"needs about .* GB is the limit \(--memory-limit\);.* Nothing was written\.$"),
    (["cluster", "{f}/nanviews", "--k", "4"], r"View 1 \(view1.npy\) has 1 row\(s\) with NaN"),
    (["extend", "blobs-old", "--groups", "2", "--n-jobs", "0"], r"--n-jobs 0 is not allowed"),
    (["cluster", "{f}/nolabels.npz", "--k", "3", "--name", "blobs"],
     "Dataset 'blobs' already exists .* with other data"),
    (["cluster", "{f}/blobs.npz", "--name", "../escape"], "dataset name"),
    (["cluster", "{f}/blobs.npz", "--out", "{f}/nowhere/labels.parquet"], "does not exist"),
    (["cluster", "{f}/blobs.npz", "--out", "{f}/labels.txt"], r"expected a \.parquet or \.csv"),
    (["cluster", "{f}/blobs.npz", "--dask", "tcp://127.0.0.1:9"], "cannot reach the Dask"),
    (["cluster", "{f}/blobs.npz", "--run-name", "blobs-old"], "already exists"),
    (["extend", "nope", "--groups", "2"], "Unknown run 'nope'"),
    (["extend", "blobs-old", "--groups", "0"], r"--groups 0 must be >= 1"),
    (["append", "other", "{f}/blobs.npz"], "Unknown dataset 'other'"),
    (["append", "blobs", "{f}/a.npy", "{f}/narrow.npy", "{f}/a.npy"], "View 1 of the new batch"),
    (["recluster", "other"], "No dataset 'other'"),
    (["show", "nope"], "Unknown run 'nope'"),
    (["rm", "blobs"], r"Dataset 'blobs' has 1 run\(s\) \(blobs-old\); `fastmice rm blobs --runs`"),
    (["rm", "blobs-old", "nope"], "No run or dataset named 'nope'"),
    (["gc", "--keep-last", "0"], "--keep-last 0 must be >= 1"),
]


@pytest.mark.parametrize(("argv", "match"), ERRORS,
                         ids=[f"{a[0]}-{i}" for i, (a, _) in enumerate(ERRORS)])
def test_errors_are_one_line_and_leave_the_store_as_it_was(argv, match, files, populated,
                                                          capfd, cli_env, file_tree):
    before = file_tree(populated.root)
    status = main([a.format(f=files) for a in argv] + ["--store", populated.url])
    captured = capfd.readouterr()
    assert status == 1
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"fastmice {argv[0]}: error: ")
    assert re.search(match, lines[0]), lines[0]
    assert file_tree(populated.root) == before


def test_recluster_without_a_run_is_an_error(files, registered, capsys, cli_env):
    assert main(["recluster", "blobs", "--store", registered.url]) == 1
    assert "has no run yet" in capsys.readouterr().err


def test_json_errors_are_one_json_object(files, registered, capfd, cli_env):
    assert main(["show", "nope", "--json", "--store", registered.url]) == 1
    captured = capfd.readouterr()
    assert json.loads(captured.out)["error"].startswith("Unknown run 'nope'")
    assert len(captured.err.splitlines()) == 1


def test_usage_errors_are_one_line_with_status_1(capsys, cli_env):
    with pytest.raises(SystemExit) as exit_info:
        main(["cluster", "x.npz", "--k", "abc"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "fastmice cluster: error: argument --k/--n-clusters: expected an int or 'auto'; got "
        "'abc' (see fastmice cluster --help)"]


@pytest.mark.parametrize("command", ["cluster", "extend", "append", "recluster", "runs", "show",
                                     "fsck", "store", "rm", "gc"])
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert f"usage: fastmice {command}" in capsys.readouterr().out


def _env(api_url: str | None = None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("FASTMICE_STORE", None)
    env.pop("FASTMICE_DEBUG", None)
    if api_url is not None:
        env["PREFECT_API_URL"] = api_url
    return env


def _cli(args, api_url=None, check=True):
    result = subprocess.run([sys.executable, "-m", "cli", *map(str, args)], cwd=ROOT,
                            env=_env(api_url), capture_output=True, text=True, timeout=300,
                            check=False)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def _one_json(stdout: str) -> dict:
    """The only JSON object on stdout (and nothing else there)."""
    assert len(stdout.strip().splitlines()) == 1, stdout
    return json.loads(stdout)


NO_PREFECT = """
import sys
from cli.main import main
status = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("prefect", "tasks", "flows"))
assert not loaded, loaded
sys.exit(status)
"""


def test_store_commands_never_import_prefect(tmp_path, files, blobs):
    from pipeline.ingest import register_batch

    store = open_store(tmp_path / "store")
    Xs, y = blobs
    register_batch(store, "blobs", Xs, y, mode="create")
    store.write_record(RUN, "blobs-old", {
        "run_id": "blobs-old", "kind": "cluster", "parent_run": None, "dataset": "blobs",
        "created": "2026-01-01T00:00:00", "n_samples": 600, "n_views": 3, "n_clusters": 4,
        "n_groups": 1, "groups_computed": 1, "groups_reused": 0, "work": {}, "seconds": 1.0,
        "labels_path": "-", "scores": None, "store": store.url, "batches": [0],
        "anchor_batches": [0], "params": {}, "groups": [], "cluster_sizes": []})
    for argv in (["runs"], ["show", "blobs-old"], ["append", "blobs", files / "blobs"],
                 ["store"], ["gc", "--dry-run", "--keep-last", "1"], ["rm", "blobs-old"],
                 ["gc", "--json"]):
        result = subprocess.run([sys.executable, "-c", NO_PREFECT, *map(str, argv),
                                 "--store", str(tmp_path / "store")], cwd=ROOT, env=_env(),
                                capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip(), argv
    assert _one_json(result.stdout)["done"] and not store.list_records(RUN)


def test_an_error_in_a_subprocess_has_no_traceback(tmp_path):
    result = _cli(["cluster", tmp_path / "missing.npz", "--store", tmp_path / "s"], check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"fastmice cluster: error: No such file or directory: {tmp_path / 'missing.npz'}"]
    assert not (tmp_path / "s").exists()


@pytest.mark.flows
def test_json_commands_end_to_end(prefect_api, files, tmp_path, blobs, split_batches):
    Xs, y = blobs
    store_dir = tmp_path / "store"
    common = ["--store", store_dir, "--groups", "4", "--anchors", "50", "--seed", "1"]
    result = _cli(["cluster", files / "blobs", "--json", *common,
                   "--out", tmp_path / "labels.csv"], prefect_api)
    summary = _one_json(result.stdout)
    for key in ("run_id", "dataset", "n_samples", "n_views", "n_clusters", "n_groups",
                "groups_computed", "groups_reused", "seconds", "labels_path", "scores"):
        assert key in summary
    assert (summary["dataset"], summary["n_samples"], summary["n_views"]) == ("blobs", 600, 3)
    assert (summary["n_clusters"], summary["groups_computed"]) == (4, 4)  # k from the labels
    assert set(summary["scores"]) == {"nmi", "ari", "acc", "purity"}
    expected = fastmice.FastMICE(4, n_groups=4, n_anchors=50, random_state=1,
                                 mode="best").fit(Xs).labels_
    table = np.loadtxt(summary["labels_path"], delimiter=",", skiprows=1, dtype=np.int64)
    np.testing.assert_array_equal(table[:, 0], np.arange(600))
    np.testing.assert_array_equal(table[:, 1], expected)

    human = _cli(["cluster", files / "blobs", *common], prefect_api)
    assert "4 view groups: 4 reused" in human.stdout
    assert "consensus reused" in human.stdout
    assert re.search(r"view groups .* 4/4 groups: 4 reused", human.stderr)  # the progress
    assert re.search(r"ingest +600 samples, 3 views already stored", human.stderr)

    extended = _one_json(_cli(["extend", summary["run_id"], "--groups", "2", "--json",
                               "--store", store_dir], prefect_api).stdout)
    assert (extended["n_groups"], extended["groups_computed"]) == (6, 2)

    runs = _one_json(_cli(["runs", "--json", "--store", store_dir]).stdout)
    assert [r["run_id"] for r in runs["runs"]][::2] == [summary["run_id"], extended["run_id"]]
    shown = _one_json(_cli(["show", extended["run_id"], "--json", "--store", store_dir]).stdout)
    assert shown["parent_run"] == summary["run_id"] and len(shown["groups"]) == 6

    (X_new, y_new), = split_batches(Xs, y, [60], seed=7)
    save_views_dir(tmp_path / "new", [X + 0.01 for X in X_new], y_new)
    appended = _one_json(_cli(["append", "blobs", tmp_path / "new", "--json",
                               "--store", store_dir]).stdout)
    assert appended["appended"] and appended["n_samples"] == 660
    reclustered = _one_json(_cli(["recluster", "blobs", "--json", "--store", store_dir],
                                 prefect_api).stdout)
    assert reclustered["n_samples"] == 660 and reclustered["n_groups"] == 6
    assert reclustered["work"]["graphs_built"] == 0
    assert reclustered["work"]["row_batches_computed"] == 6
    assert reclustered["group_work"] == {"built": 0, "extended": 6, "reclustered": 0,
                                         "reused": 0}
    assert reclustered["relabel"]["parent_run"] == extended["run_id"]


SLOW_GROUPS = """
import sys, time
import fastmice
real = fastmice.cluster_group
def slow(*args, **kwargs):
    time.sleep(0.6)
    return real(*args, **kwargs)
fastmice.cluster_group = slow
from cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.flows
def test_sigkill_then_rerun_computes_only_the_unfinished_groups(prefect_api, files, tmp_path,
                                                                blobs):
    Xs, _ = blobs
    n_groups = 6
    store_dir = tmp_path / "store"
    args = ["cluster", files / "blobs", "--store", store_dir, "--groups", n_groups,
            "--anchors", "50", "--seed", "2", "--json"]
    store = open_store(store_dir)
    proc = subprocess.Popen([sys.executable, "-c", SLOW_GROUPS, *map(str, args)], cwd=ROOT,
                            env=_env(prefect_api), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 240
    try:
        while len(store.list(BASE_LABELS)) < 2:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.time() < deadline, "no view group finished in time"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the command and anything it started
        proc.wait()
    finished = len(store.list(BASE_LABELS))
    assert 2 <= finished < n_groups
    assert proc.stdout.read() == b""
    proc.stdout.close()
    assert store.list_records(RUN) == []

    resumed = _one_json(_cli(args, prefect_api).stdout)
    assert resumed["groups_computed"] == n_groups - finished
    assert resumed["groups_reused"] == finished
    expected = fastmice.FastMICE(4, n_groups=n_groups, n_anchors=50, random_state=2,
                                 mode="best").fit(
        Xs).labels_
    labels = store.get(store.read_record(RUN, resumed["run_id"])["labels"]).column("label")
    np.testing.assert_array_equal(labels.to_numpy(), expected)
