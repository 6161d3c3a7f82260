"""Hostile and malformed input, through the command line and the library.

Every case is refused with one line naming the file, parameter or value (``fastmice
COMMAND: error: ...``, status 1, nothing on stdout, no traceback), and leaves the store and
the data byte for byte as they were (every file hashed before and after). The pickle planted
in two of the files is never run.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hostile_files import FILE_CASES, write_hostile_files
from reliability_kit import ROOT, env, tree

import fastmice
from cli.main import main
from pipeline.ingest import load_npz, read_data, register_batch
from pipeline.keys import RUN
from storage import DatasetStore, open_store

SECTION = "hostile input"
pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_hostile_files(tmp_path_factory.mktemp("hostile") / "files")


@pytest.fixture(scope="module")
def store_dir(files, tmp_path_factory):
    """A store holding dataset ``good`` and a run record ``good-run``."""
    store_dir = tmp_path_factory.mktemp("hostile-store") / "store"
    store = open_store(store_dir)
    Xs, y = read_data([files["dir"] / "good.npz"])
    register_batch(store, "good", Xs, y, mode="create")
    store.write_record(RUN, "good-run", {"run_id": "good-run", "dataset": "good",
                                         "created": "2026-01-01T00:00:00"})
    return store_dir


def _refused(argv, expected, store_dir, files, capfd, battery, case=None) -> None:
    """Run ``fastmice ARGV`` in this process; assert a clean refusal and nothing changed."""
    before = tree(store_dir), tree(files["dir"])
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's own exit (--help and the like never get here)
        status = exc.code
    captured = capfd.readouterr()
    lines = captured.err.splitlines()
    line = lines[0] if lines else ""
    ok = (status == 1 and captured.out == "" and len(lines) == 1
          and line.startswith((f"fastmice {argv[0]}: error: ", "fastmice: error: "))
          and expected in line
          and "Traceback" not in captured.err
          and (tree(store_dir), tree(files["dir"])) == before
          and not files["marker"].exists())
    label = case or " ".join(map(str, argv)).replace(str(files["dir"]) + "/", "").replace(
        str(store_dir), "STORE")
    label = "".join(c if c.isprintable() else repr(c)[1:-1] for c in label)
    battery.record(SECTION, label,
                   f"status 1, one line with `{expected}`; store unchanged",
                   f"status {status}: `{line[line.find('error: ') + 7:][:100]}`".replace(
                       str(store_dir), "STORE").replace(str(files["dir"]) + "/", ""), ok)
    assert ok, (status, captured.err, captured.out)


@pytest.mark.parametrize(("name", "expected"), FILE_CASES, ids=[n for n, _ in FILE_CASES])
def test_hostile_files_are_refused(name, expected, files, store_dir, capfd, battery):
    _refused(["cluster", files["dir"] / name, "--k", 3, "--store", store_dir],
             expected, store_dir, files, capfd, battery, f"`cluster {name}`")


PARAMETERS = [
    (["cluster", "{f}/a.npy", "{f}/short.npy", "--k", 3], "View 1 (short.npy) has 40 samples"),
    (["cluster", "{f}/good.npz", "--k", 0], "--k 0 must be >= 2"),
    (["cluster", "{f}/good.npz", "--k", 100000], "--k 100000 must be <= n_samples=60"),
    (["cluster", "{f}/good.npz", "--groups", 0], "--groups 0 must be >= 1"),
    (["cluster", "{f}/good.npz", "--groups", -2], "--groups -2 must be >= 1"),
    (["cluster", "{f}/good.npz", "--groups", 10**9], "1000000000 view groups"),
    (["cluster", "{f}/good.npz", "--anchors", 0], "--anchors 0"),
    (["cluster", "{f}/good.npz", "--neighbors", 0], "--neighbors 0"),
    (["cluster", "{f}/good.npz", "--metric", "manhattan"], "metric 'manhattan'"),
    (["cluster", "{f}/good.npz", "--metric", "euclidean,cosine,cosine"], "metric has 3 entries"),
    (["cluster", "{f}/good.npz", "--feature-ratio", "0.9,0.1"], "--feature-ratio [0.9, 0.1]"),
    (["cluster", "{f}/good.npz", "--base-clusters", "x"], "--base-clusters: expected two"),
    (["cluster", "{f}/good.npz", "--seed", 2**40], "--random-state 1099511627776 must be in"),
    (["cluster", "{f}/good.npz", "--n-jobs", 0], "--n-jobs 0 is not allowed"),
    (["cluster", "{f}/good.npz", "--k", "abc"], "expected an int or 'auto'; got 'abc'"),
    (["cluster", "{f}/good.npz", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["cluster"], "the following arguments are required: DATA"),
    (["cluster", "{f}/good.npz", "--name", "../escape"], "name (--name) '../escape'"),
    (["cluster", "{f}/good.npz", "--name", "/etc/passwd"], "name (--name) '/etc/passwd'"),
    (["cluster", "{f}/good.npz", "--name", "a\x00b"], "contains a NUL character"),
    (["cluster", "{f}/good\x00.npz"], "contains a NUL character"),
    (["cluster", "{f}/good.npz", "--name", "caf\udcff"], "name (--name) 'caf\\udcff'"),
    (["cluster", "{f}/good.npz", "--run-name", "../run"], "Invalid run name '../run'"),
    (["cluster", "{f}/missing.npz"], "No such file or directory"),
    (["cluster", "{f}/good.npz", "--out", "{f}/nowhere/labels.csv"], "does not exist"),
    (["show", "../../etc/passwd"], "Invalid run id '../../etc/passwd'"),
    (["show", "nope"], "Unknown run 'nope'"),
    (["extend", "nope", "--groups", 2], "Unknown run 'nope'"),
    (["append", "other", "{f}/good.npz"], "Unknown dataset 'other'"),
    (["append", "good", "{f}/a.npy"], "The new batch has 1 views; dataset 'good' has 2"),
    (["recluster", "other"], "No dataset 'other'"),
]


@pytest.mark.parametrize(("argv", "expected"), PARAMETERS,
                         ids=[f"{a[0]}-{i}" for i, (a, _) in enumerate(PARAMETERS)])
def test_bad_parameters_and_names_are_refused(argv, expected, files, store_dir, capfd,
                                              battery):
    argv = [a.format(f=files["dir"]) if isinstance(a, str) else a for a in argv]
    _refused([*argv, "--store", store_dir] if len(argv) > 1 or argv[0] != "cluster" else argv,
             expected, store_dir, files, capfd, battery)


def test_bad_stores_are_refused(files, store_dir, tmp_path, capfd, battery, monkeypatch):
    import fsspec
    from s3fs import S3FileSystem

    cases = [(files["dir"] / "a.npy", "is a file, not a folder"),
             (files["dir"] / "a.npy" / "store", "is a file, so no folder can be created"),
             ("memory://fastmice", "lives only as long as one command"),
             ("nosuchproto://bucket/x", "unknown protocol 'nosuchproto'")]
    if os.geteuid() == 0:
        cases.append(("/sys/fastmice-store", "cannot write in /sys"))
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append((locked / "store", "cannot write in"))
    for store, expected in cases:
        _refused(["cluster", files["dir"] / "good.npz", "--store", store], expected, store_dir,
                 files, capfd, battery)
    real = fsspec.get_filesystem_class

    def without_s3fs(protocol):
        if protocol == "s3":
            raise ImportError("Install s3fs to access S3")
        return real(protocol)

    monkeypatch.setattr(fsspec, "get_filesystem_class", without_s3fs)
    _refused(["runs", "--store", "s3://bucket/store"], 'pip install -e ".[s3]"', store_dir,
             files, capfd, battery, "`runs --store s3://...` without s3fs installed")
    monkeypatch.setattr(fsspec, "get_filesystem_class", real)
    for name, value in {"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "x",
                        "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    S3FileSystem.clear_instance_cache()  # fsspec caches filesystems with their endpoint
    _refused(["runs", "--store", "s3://unreachable/store"], "cannot be reached", store_dir,
             files, capfd, battery, "`runs --store s3://...` at an endpoint nobody answers")
    S3FileSystem.clear_instance_cache()
    # `cluster` looks for a stored answer before it lists the root: still one line.
    _refused(["cluster", files["dir"] / "good.npz", "--store", "s3://unreachable/store"],
             "cannot be reached", store_dir, files, capfd, battery,
             "`cluster --store s3://...` at an endpoint nobody answers")
    S3FileSystem.clear_instance_cache()


def test_symlinks_out_of_the_store_are_not_followed(files, store_dir, tmp_path, capfd,
                                                    battery):
    outside = tmp_path / "outside"
    outside.mkdir()
    (store_dir / "records" / "run" / "evil").symlink_to(outside, target_is_directory=True)
    (store_dir / "records" / "dataset" / "evil").symlink_to(outside, target_is_directory=True)
    try:
        _refused(["show", "evil", "--store", store_dir], "leads out of store", store_dir, files,
                 capfd, battery, "`show evil`, records/run/evil a link out of the store")
        _refused(["cluster", files["dir"] / "good.npz", "--name", "evil", "--store", store_dir],
                 "leads out of store", store_dir, files, capfd, battery,
                 "`cluster --name evil`, records/dataset/evil a link out of the store")
        assert list(outside.iterdir()) == []
    finally:
        (store_dir / "records" / "run" / "evil").unlink()
        (store_dir / "records" / "dataset" / "evil").unlink()


def test_no_traceback_in_a_real_process(files, store_dir, battery):
    """The same refusals in a subprocess (the command as a user runs it)."""
    for name in ("text.npy", "object.npy", "huge.npy"):
        before = tree(store_dir)
        result = subprocess.run([sys.executable, "-m", "cli", "cluster", str(files["dir"] / name),
                                 "--k", "3", "--store", str(store_dir)], cwd=ROOT, env=env(),
                                capture_output=True, text=True, timeout=120, check=False)
        ok = (result.returncode == 1 and len(result.stderr.splitlines()) == 1
              and "Traceback" not in result.stderr and result.stdout == ""
              and tree(store_dir) == before and not files["marker"].exists())
        battery.record(SECTION, f"`cluster {name}` in a subprocess", "status 1, one line, "
                       "no traceback", f"status {result.returncode}, "
                       f"{len(result.stderr.splitlines())} line(s)", ok)
        assert ok, result.stderr


def _library(call, expected: str) -> tuple[bool, str]:
    try:
        call()
    except (ValueError, TypeError, OSError) as exc:
        text = str(exc)
        return expected in text and len(text.splitlines()) == 1, text
    return False, "no error"


def test_the_library_refuses_alike(files, store_dir, tmp_path, battery):
    Xs = files["Xs"]
    nan = Xs[0].copy()
    nan[2, 2] = np.nan
    store = open_store(store_dir)
    escape = tmp_path / "escape-store"
    (escape / "records" / "run").mkdir(parents=True)
    (escape / "records" / "run" / "evil").symlink_to(tmp_path, target_is_directory=True)
    cases = [
        ("read_data([text.npy])", lambda: read_data([files["dir"] / "text.npy"]),
         "is not a .npy file"),
        ("read_data([object.npy])", lambda: read_data([files["dir"] / "object.npy"]),
         "holds Python objects"),
        ("load_npz(pickled.npz)", lambda: load_npz(files["dir"] / "pickled.npz"),
         "holds Python objects"),
        ("FastMICE(n_clusters=0).fit", lambda: fastmice.FastMICE(0).fit(Xs), "n_clusters=0"),
        ("FastMICE(metric='manhattan').fit",
         lambda: fastmice.FastMICE(3, metric="manhattan").fit(Xs), "manhattan"),
        ("check_views with a NaN", lambda: fastmice.check_views([nan, Xs[1]]), "View 0"),
        ("DatasetStore.create('../x')", lambda: DatasetStore(store).create("../x", Xs),
         "Invalid dataset name '../x'"),
        ("read_record('run', 'a/b')", lambda: store.read_record("run", "a/b"),
         "Invalid record name 'a/b'"),
        ("a store whose path is a file: put", lambda: open_store(files["dir"] / "a.npy").put(
            "labels", "k", np.arange(3)), "while writing artifact labels/k"),
        ("a record folder linked out of the store", lambda: open_store(escape).read_record(
            "run", "evil"), "leads out of store"),
    ]
    before = tree(store_dir), tree(files["dir"])
    for case, call, expected in cases:
        ok, text = _library(call, expected)
        battery.record(SECTION, f"library: {case}", f"one-line error with `{expected}`",
                       f"`{text[:100]}`", ok)
        assert ok, (case, text)
    assert (tree(store_dir), tree(files["dir"])) == before
    assert not files["marker"].exists()
