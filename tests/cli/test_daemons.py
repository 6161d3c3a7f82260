"""``fastmice daemon status|stop`` and the keys that keep shared processes apart.

The first test registers a stand-in process (no Prefect: seconds); the second runs two
environments of different fastmice code versions on one machine and one Prefect home (a copy
of the checkout with another ``CODE_VERSION``): each gets its own shared API server and warm
process, a command never joins the other's, and ``daemon stop`` stops all four (about two
minutes on 2 cores). Every test has a runtime folder of its own (``TMPDIR``), so that it
never lists or stops the processes of anyone else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from storage.locks import owner_alive, process_identity

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cli", "fastmice", "flows", "pipeline", "storage", "tasks")


@pytest.fixture
def runtime():
    """A short private TMPDIR (a Unix socket path must stay under 108 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="fmd"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _env(root: Path, runtime: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "FASTMICE_"))}
    env.update(PYTHONPATH=str(root), TMPDIR=str(runtime), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               **extra)
    return env


def _fastmice(root: Path, args: list[str], env: dict[str, str],
              timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *map(str, args)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_daemon_status_lists_and_stop_stops_a_registered_process(runtime, tmp_path):
    env = _env(ROOT, runtime)
    empty = _fastmice(ROOT, ["daemon", "status"], env, timeout=60)
    assert empty.returncode == 0 and "nothing left running" in empty.stdout, empty.stderr
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        folder = runtime / f"fastmice-warm-{os.getuid()}"
        folder.mkdir(mode=0o700)
        used = folder / "x.used"
        used.touch()
        os.utime(used, (time.time() - 30, time.time() - 30))
        (folder / f"warm-{stand_in.pid}.json").write_text(json.dumps({
            "kind": "warm", "key": "prefect-0.0-code0", "process": process_identity(stand_in.pid),
            "started": time.time() - 90, "socket": str(folder / "x.sock"),
            "used": str(used), "python": sys.prefix, "idle": 600}))
        status = _fastmice(ROOT, ["daemon", "status"], env, timeout=60)
        row = next(line for line in status.stdout.splitlines() if line.startswith("warm"))
        assert f" {stand_in.pid} " in row and "prefect-0.0-code0" in row
        assert re.search(r"\d+ MB", row) and "1m3" in row and "9m" in row, row  # age, stops in
        listed = json.loads(_fastmice(ROOT, ["daemon", "status", "--json"], env).stdout)
        assert [d["pid"] for d in listed["daemons"]] == [stand_in.pid]
        assert 25 <= listed["daemons"][0]["idle_s"] <= 60
        stop = _fastmice(ROOT, ["daemon", "stop"], env, timeout=60)
        assert stop.returncode == 0 and f"stopped the warm process {stand_in.pid}" in stop.stdout
        assert stand_in.wait(10) is not None
        assert not list(folder.glob("*.json"))
        after = _fastmice(ROOT, ["daemon", "status"], env, timeout=60)
        assert "nothing left running" in after.stdout
    finally:
        stand_in.kill()


def _copy_with_code_version(target: Path, version: str) -> Path:
    """The checkout's packages with ``CODE_VERSION = version``: another environment."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, target / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    init = target / "fastmice" / "__init__.py"
    text, n = re.subn(r'^CODE_VERSION = "[^"]*"', f'CODE_VERSION = "{version}"',
                      init.read_text(), flags=re.M)
    assert n == 1
    init.write_text(text)
    return target


def _data(folder: Path) -> Path:
    from fastmice.datasets import make_multiview_blobs
    from pipeline.ingest import save_views_dir

    Xs, y = make_multiview_blobs(120, n_views=2, n_clusters=3, random_state=3)
    save_views_dir(folder, [np.ascontiguousarray(X) for X in Xs], y)
    return folder


@pytest.mark.slow
def test_two_code_versions_get_their_own_server_and_warm_process(runtime, tmp_path):
    data = _data(tmp_path / "data")
    other = _copy_with_code_version(tmp_path / "other", "13-other")
    home = tmp_path / "home"
    keys = {ROOT: None, other: None}
    outputs = {}
    try:
        for root in (ROOT, other):
            env = _env(root, runtime, FASTMICE_PREFECT_HOME=str(home), FASTMICE_API_IDLE="300")
            done = _fastmice(root, ["cluster", data, "--k", 3, "--groups", 2, "--anchors", 20,
                                    "--store", tmp_path / f"store-{root.name}", "--json"], env)
            assert done.returncode == 0, done.stderr[-3000:]
            outputs[root] = done.stderr
            line = [ln for ln in done.stderr.splitlines() if "left running" in ln]
            assert len(line) == 1, done.stderr[-2000:]
            keys[root] = re.search(r"(prefect-\S+-code\S+);", line[0])[1]
        assert keys[ROOT].endswith("code" + _code_version()) and keys[other].endswith(
            "code13-other")
        servers = {key: json.loads((home / "fastmice-api" / "shared" / key /
                                    "shared.json").read_text())["server"] for key in keys.values()}
        assert len({s["pid"] for s in servers.values()}) == 2
        assert all(owner_alive(s) for s in servers.values())
        # A second command of the first environment joins its own server, starts nothing.
        env = _env(ROOT, runtime, FASTMICE_PREFECT_HOME=str(home), FASTMICE_API_IDLE="300")
        again = _fastmice(ROOT, ["cluster", data, "--k", 3, "--groups", 3, "--anchors", 20,
                                 "--store", tmp_path / "store-again", "--json"], env)
        assert again.returncode == 0 and "left running" not in again.stderr, again.stderr[-2000:]
        deadline = time.time() + 120  # each environment's warm process is listening
        while len(list((runtime / f"fastmice-warm-{os.getuid()}").glob("warm-*.json"))) < 2:
            assert time.time() < deadline
            time.sleep(1)
        status = json.loads(_fastmice(ROOT, ["daemon", "status", "--json"], env).stdout)
        kinds = sorted((d["kind"], d["key"]) for d in status["daemons"])
        print("\n" + _fastmice(ROOT, ["daemon", "status"], env).stdout)
        assert kinds == sorted([("server", keys[ROOT]), ("server", keys[other]),
                                ("warm", keys[ROOT]), ("warm", keys[other])]), kinds
        assert all(d["rss_mb"] > 50 for d in status["daemons"])
        stop = _fastmice(ROOT, ["daemon", "stop", "--json"], env)
        assert len(json.loads(stop.stdout)["stopped"]) == 4
        assert not any(owner_alive(s) for s in servers.values())
        empty = json.loads(_fastmice(ROOT, ["daemon", "status", "--json"], env).stdout)
        assert empty["daemons"] == []
    finally:
        _fastmice(ROOT, ["daemon", "stop"], _env(ROOT, runtime))


def _code_version() -> str:
    import fastmice

    return fastmice.CODE_VERSION
