"""End to end against a real Prefect server: the inbox deployment, served and run on demand.

Starts ``prefect server start`` (SQLite in a temporary PREFECT_HOME) and the serve process
(``python -m cli.serve``, serving ``flows/deployments.py``), drops batch files into an inbox
and runs the deployment through the server's REST API (what ``prefect deployment run``
does), then reads the artifact store.
About 35-60 s on 2 cores; marked ``server`` and ``slow``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip(
    "prefect", reason="prefect is not installed; install the pipeline extra: "
    "pip install -e '.[pipeline]'"
)

pytestmark = [pytest.mark.server, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
FLOW, DEPLOYMENT = "fastmice-recluster-inbox", "inbox-recluster"
CRON = "0 3 1 1 *"  # once a year: the test triggers its runs itself
SERVER_TIMEOUT = 120.0
RUN_TIMEOUT = 240.0
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


# ---------------------------------------------------------------------------- processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start ``cmd`` from the repository root in its own process group, output to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def _stop(proc: subprocess.Popen, timeout: float = 20.0) -> None:
    """SIGTERM the process group; SIGKILL whatever is left of it after ``timeout``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # leftovers: flow-run subprocesses, a stuck server
    proc.wait(timeout)


def _tail(log: Path, n: int = 40) -> str:
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join(lines[-n:])


# ---------------------------------------------------------------------------- REST API


def _api(url: str, method: str = "GET", body: Any = None, timeout: float = 10.0,
         attempts: int = 6) -> Any:
    """Call the REST API; retry a 503, which a busy SQLite-backed server answers under load."""
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(attempts):
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            if error.code != 503 or attempt == attempts - 1:
                raise
        time.sleep(2.0 * (attempt + 1))
    raise AssertionError("unreachable")


def _wait_for(what: str, check: Any, timeout: float, proc: subprocess.Popen, log: Path) -> Any:
    """Poll ``check()`` until it returns a true value; fail with the log on exit or timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except (urllib.error.URLError, OSError, ValueError):
            value = None
        if value:
            return value
        if proc.poll() is not None:
            pytest.fail(f"{what}: the process exited (rc={proc.returncode}):\n{_tail(log)}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {timeout:.0f} s:\n{_tail(log)}")
        time.sleep(1.0)


def _run_deployment(api: str, deployment_id: str, serve: subprocess.Popen,
                    log: Path) -> dict[str, Any]:
    """Create a flow run of the deployment and wait for a terminal state."""
    run = _api(f"{api}/deployments/{deployment_id}/create_flow_run", "POST", {})

    def finished() -> dict[str, Any] | None:
        state = _api(f"{api}/flow_runs/{run['id']}")["state"]
        return state if state and state["type"] in TERMINAL else None

    state = _wait_for(f"flow run {run['name']}", finished, RUN_TIMEOUT, serve, log)
    assert state["type"] == "COMPLETED", f"{state['type']}: {state['message']}\n{_tail(log)}"
    return state


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A ``prefect server start`` on a free port, SQLite in a temporary PREFECT_HOME."""
    home = tmp_path_factory.mktemp("prefect-server")
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    log = home / "server.log"
    server = _start([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                     "--port", str(port), "--analytics-off"], env, log)
    try:
        _wait_for("server /api/health", lambda: _api(f"{api}/health", timeout=3),
                  SERVER_TIMEOUT, server, log)
        yield {"api": api, "env": {**env, "PREFECT_API_URL": api}, "home": home}
    finally:
        _stop(server)


def _write_batch(inbox: Path, name: str, Xs: list[np.ndarray], y: np.ndarray) -> Path:
    """Write a batch in the INDEX layout as a producer should: a hidden temp name, renamed."""
    tmp = inbox / f".{name}.tmp.npz"
    np.savez(tmp, labels=y, **{f"view{v}": X for v, X in enumerate(Xs)})
    final = inbox / f"{name}.npz"
    os.replace(tmp, final)
    return final


# ---------------------------------------------------------------------------- the test


def test_served_inbox_deployment_ingests_and_reclusters(prefect_server, tmp_path):
    from fastmice.datasets import make_multiview_blobs
    from pipeline.runs import list_runs
    from storage import open_store
    from storage.datasets import DatasetStore

    api, env = prefect_server["api"], dict(prefect_server["env"])
    inbox, store_dir = tmp_path / "inbox", tmp_path / "store"
    inbox.mkdir()
    Xs, y = make_multiview_blobs(300, 2, 3, [12, 16], random_state=0)
    first, second = slice(0, 200), slice(200, 300)

    env["PREFECT_RUNNER_POLL_FREQUENCY"] = "2"  # pick up runs faster than the default 10 s
    log = tmp_path / "serve.log"
    serve = _start([sys.executable, "-m", "cli.serve", "--inbox", str(inbox),
                    "--dataset", "blobs", "--k", "3", "--groups", "4", "--anchors", "40",
                    "--store", str(store_dir), "--cron", CRON], env, log)
    try:
        deployment = _wait_for(
            "the served deployment", lambda: _api(f"{api}/deployments/name/{FLOW}/{DEPLOYMENT}"),
            SERVER_TIMEOUT, serve, log)
        assert [s["schedule"].get("cron") for s in deployment["schedules"]] == [CRON]
        limit = deployment.get("global_concurrency_limit") or {}
        assert limit.get("limit") == 1, deployment

        # 1. The first file creates the dataset and a first run clusters it.
        _write_batch(inbox, "batch-000", [X[first] for X in Xs], y[first])
        _run_deployment(api, deployment["id"], serve, log)
        store = open_store(str(store_dir))
        assert DatasetStore(store).manifest("blobs")["n_samples"] == 200
        assert [r["kind"] for r in list_runs(store, "blobs")] == ["cluster"]
        params = list_runs(store, "blobs")[0]["params"]  # bound by the serve command
        assert (params["n_groups"], params["n_anchors"], params["random_state"]) == (4, 40, 0)
        assert sorted(p.name for p in inbox.iterdir()) == ["processed"]

        # 2. A new batch is appended, and the dataset reclustered: labels for all 300 samples.
        _write_batch(inbox, "batch-001", [X[second] for X in Xs], y[second])
        _run_deployment(api, deployment["id"], serve, log)
        manifest = DatasetStore(store).manifest("blobs")
        assert [b["n_samples"] for b in manifest["batches"]] == [200, 100]
        runs = list_runs(store, "blobs")
        assert [r["kind"] for r in runs] == ["cluster", "recluster"]
        latest = runs[-1]
        assert latest["dataset_fingerprint"] == manifest["fingerprint"]
        table = store.get(latest["labels"])
        assert table.num_rows == 300
        assert sorted(table.column("sample_id").to_pylist()) == list(range(300))
        assert set(table.column("label").to_pylist()) <= {0, 1, 2}
        assert sorted(p.name for p in (inbox / "processed").iterdir()) == [
            "batch-000.npz", "batch-001.npz"]

        # 3. The same batch again under another name, and a batch that does not fit the
        #    dataset: nothing stored, no new run; the misfit is set aside with its reason.
        shutil.copy(inbox / "processed" / "batch-001.npz", inbox / "again.npz")
        _write_batch(inbox, "misfit", [Xs[0][:10], Xs[1][:10, :5]], y[:10])
        _run_deployment(api, deployment["id"], serve, log)
        assert DatasetStore(store).manifest("blobs")["version"] == manifest["version"]
        assert len(list_runs(store, "blobs")) == 2
        assert (inbox / "processed" / "again.npz").exists()
        reason = (inbox / "rejected" / "misfit.npz.error.txt").read_text()
        assert "View 1 of the new batch has 5 features" in reason
        assert sorted(p.name for p in inbox.iterdir()) == ["processed", "rejected"]
    finally:
        _stop(serve)  # the serve process before the server (PREFECT.md section 4)
    stopped = log.read_text(errors="replace")
    assert "never awaited" not in stopped, _tail(log)  # Runner.astop, on SIGTERM (3.8.8)
