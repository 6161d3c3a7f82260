"""Soak test of the served inbox deployment through faults (``python -m cli.serve``).

A real ``prefect server start`` (SQLite, a temporary home) and the serve process run the inbox
deployment every 2 seconds while a producer drops batch files throughout. Meanwhile:

1. the Prefect server is killed with SIGKILL, and started again (same database and port)
   once the serve process must have called it lost (``flows.serving.LOST_AFTER`` + 5 s);
2. the serve process is killed with SIGKILL and started again (a run of it may still be at
   work: it finishes, and the new process takes what is left);
3. one cycle's writes fail as on a full disk (ENOSPC, ``FASTMICE_FAULT`` armed for a single
   flow-run process by the ``sitecustomize`` below).

Then every batch must be stored exactly once and clustered (the latest run covers every
sample), none left in the inbox, none rejected, and the serve output holds no traceback: a
lost server is said in one line. ``FASTMICE_SOAK_CYCLES`` (default 12, about 2-3 minutes
on 2 cores) sets how many cycles it waits for; the figures are printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("prefect", reason="the pipeline extra: pip install -e '.[pipeline]'")

from fastmice.datasets import make_multiview_blobs
from flows.serving import LOST_AFTER
from storage import DatasetStore, open_store

pytestmark = [pytest.mark.slow, pytest.mark.server]

ROOT = Path(__file__).resolve().parents[2]
CYCLES = int(os.environ.get("FASTMICE_SOAK_CYCLES", "12"))
BATCHES = max(6, CYCLES // 2)
#: Batches kept for the ENOSPC fault should a run that started unarmed take its batch.
SPARE_BATCHES = 3
PER_BATCH = 40
TIMEOUT = 240 + 25 * CYCLES
#: The states of a cycle that ran (a run due while one ran is CANCELLED: dropped, no cycle).
TERMINAL = ("COMPLETED", "FAILED", "CRASHED")

#: Arms FASTMICE_FAULT in the first flow-run process that starts, once the test has created
#: ARM/armed, while a batch file waits in the inbox: every store write of that one run fails
#: with ENOSPC. A run whose process started just before the batch came may still take it
#: unarmed (it lists the inbox seconds later); the test then drops a spare batch.
SITECUSTOMIZE = '''
import glob, os
_arm = os.environ.get("FASTMICE_SOAK_ARM")
if (_arm and os.environ.get("PREFECT__FLOW_RUN_ID") and os.path.exists(_arm + "/armed")
        and glob.glob(os.environ["FASTMICE_SOAK_INBOX"] + "/*.npz")):
    try:
        os.close(os.open(_arm + "/fired", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        os.environ["FASTMICE_FAULT"] = "write:*:1+:enospc,record:*:1+:enospc"
    except FileExistsError:
        pass
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(url: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(f"{url}{path}", method="POST" if body is not None else "GET",
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read() or b"null")


class Soak:
    """The processes of the soak and what was done to them."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.port = tmp, _free_port()
        self.url = f"http://127.0.0.1:{self.port}/api"
        self.inbox, self.store = tmp / "inbox", tmp / "store"
        (tmp / "arm").mkdir()
        (tmp / "site").mkdir()
        (tmp / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("PREFECT_", "FASTMICE_"))}
        self.server_env = {**base, "PREFECT_HOME": str(tmp / "home"),
                           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        self.serve_env = {**base, "PREFECT_API_URL": self.url, "PREFECT_HOME": str(tmp / "sh"),
                          "PREFECT_RUNNER_POLL_FREQUENCY": "1",
                          "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                          "FASTMICE_SOAK_ARM": str(tmp / "arm"),
                          "FASTMICE_SOAK_INBOX": str(tmp / "inbox"),
                          "PYTHONPATH": os.pathsep.join([str(tmp / "site"), str(ROOT)])}
        self.server: subprocess.Popen | None = None
        self.serve: subprocess.Popen | None = None
        self.faults: list[str] = []
        self.serve_exits: list[int] = []

    def start_server(self) -> None:
        with (self.tmp / "server.log").open("ab") as log:
            self.server = subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                 "--port", str(self.port), "--analytics-off"], cwd=self.tmp,
                env=self.server_env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)

    def start_serve(self) -> None:
        with (self.tmp / "serve.log").open("ab") as log:
            self.serve = subprocess.Popen(
                [sys.executable, "-m", "cli.serve", "--inbox", str(self.inbox), "--dataset",
                 "soak", "--store", str(self.store), "--k", "3", "--groups", "3",
                 "--anchors", "20", "--seed", "5", "--n-jobs", "1", "--interval", "2",
                 "--grace", "180"], cwd=ROOT, env=self.serve_env, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def runs(self) -> list[dict[str, Any]] | None:
        """The inbox deployment's flow runs in a terminal state (None: no answer)."""
        with contextlib.suppress(OSError, ValueError):
            runs = _api(self.url, "/flow_runs/filter", {
                "flow_runs": {"state": {"type": {"any_": list(TERMINAL)}}},
                "deployments": {"name": {"any_": ["inbox-recluster"]}}, "limit": 200})
            return runs
        return None

    def wait(self, what: str, check: Any, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            if self.serve is not None and self.serve.poll() is not None:
                self.serve_exits.append(self.serve.returncode)
                pytest.fail(f"{what}: serve exited ({self.serve.returncode}):\n{self.log()}")
            time.sleep(0.5)
        pytest.fail(f"{what}: not within {timeout:.0f} s:\n{self.log()}")

    def log(self, n: int = 4000) -> str:
        return (self.tmp / "serve.log").read_text(errors="replace")[-n:]

    def stop(self) -> None:
        for proc in (self.serve, self.server):
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        for line in Path("/proc").glob("[0-9]*/environ"):  # runs of a killed serve process
            with contextlib.suppress(OSError):
                if f"FASTMICE_SOAK_ARM={self.tmp / 'arm'}".encode() in line.read_bytes():
                    os.kill(int(line.parent.name), signal.SIGKILL)


def _batches(tmp: Path) -> list[list[np.ndarray]]:
    n_batches = BATCHES + SPARE_BATCHES
    Xs, _ = make_multiview_blobs(n_batches * PER_BATCH, n_views=2, n_clusters=3,
                                 separation=2.5, random_state=7)
    return [[np.ascontiguousarray(X[i * PER_BATCH:(i + 1) * PER_BATCH]) for X in Xs]
            for i in range(n_batches)]


def _drop(inbox: Path, index: int, views: list[np.ndarray]) -> None:
    """What a producer does: write under a hidden name, then rename."""
    hidden = inbox / f".batch-{index:03d}.tmp.npz"
    np.savez(hidden, **{f"view{v}": X for v, X in enumerate(views)})
    os.replace(hidden, inbox / f"batch-{index:03d}.npz")


def test_served_inbox_takes_every_batch_once_through_server_serve_and_disk_faults(tmp_path):
    soak = Soak(tmp_path)
    batches = _batches(tmp_path)
    soak.inbox.mkdir()
    try:
        soak.start_server()
        soak.wait("server health", lambda: _ok(soak.url), 180)
        soak.start_serve()
        dropped, started = 0, time.monotonic()
        # Faults at these cycle counts; batches dropped one every other cycle, the last one
        # with the ENOSPC fault (it needs a batch to write).
        plan = {max(2, CYCLES // 4): "server", max(4, CYCLES // 2): "serve",
                max(6, 3 * CYCLES // 4): "enospc"}
        while True:
            runs = soak.runs()
            cycles = len(runs) if runs is not None else None
            if cycles is not None:
                while dropped < min(BATCHES - 1, cycles // 2 + 1):
                    _drop(soak.inbox, dropped, batches[dropped])
                    dropped += 1
                for at, fault in sorted(plan.items()):
                    if cycles >= at and fault not in soak.faults:
                        _inject(soak, fault)
                        if fault == "enospc":
                            _drop(soak.inbox, dropped, batches[dropped])
                            dropped += 1
                        break
                else:
                    if _fault_missed(soak) and dropped < len(batches):
                        _drop(soak.inbox, dropped, batches[dropped])
                        dropped += 1
                if (cycles >= CYCLES and dropped >= BATCHES and len(soak.faults) == 3
                        and _settled(soak, dropped)):
                    break
            assert time.monotonic() - started < TIMEOUT, (
                f"{cycles} cycles, faults {soak.faults}, {dropped} dropped:\n{soak.log()}")
            if soak.serve.poll() is not None:
                pytest.fail(f"serve exited ({soak.serve.returncode}):\n{soak.log()}")
            time.sleep(1.0)
        soak.serve.send_signal(signal.SIGINT)
        status = soak.serve.wait(60)
        runs = soak.runs() or []
    finally:
        soak.stop()
    _check(soak, runs, status, time.monotonic() - started, dropped)


def _ok(url: str) -> bool:
    with contextlib.suppress(OSError, ValueError):
        return _api(url, "/health") is True
    return False


def _inject(soak: Soak, fault: str) -> None:
    if fault == "server":  # SIGKILL, then the same server again once serve must call it lost
        os.killpg(soak.server.pid, signal.SIGKILL)
        soak.server.wait(30)
        # A server back within LOST_AFTER s is not lost (rightly): a 3 s pause plus a quick
        # restart (~2 s, its database already made) did not always reach it.
        time.sleep(LOST_AFTER + 5.0)
        soak.start_server()
    elif fault == "serve":  # SIGKILL of the serve process alone (a run of it may go on)
        soak.serve.send_signal(signal.SIGKILL)
        soak.serve.wait(30)
        time.sleep(1.0)
        soak.start_serve()
    else:  # the next flow run's writes fail, as on a full disk
        (soak.tmp / "arm" / "armed").touch()
    soak.faults.append(fault)


def _fault_missed(soak: Soak) -> bool:
    """The ENOSPC fault armed, its batch taken, and no run started armed: it must go again."""
    arm = soak.tmp / "arm"
    return ((arm / "armed").exists() and not (arm / "fired").exists()
            and not any(soak.inbox.glob("*.npz")))


def _settled(soak: Soak, dropped: int) -> bool:
    """Every batch dropped stored and the latest run covering the dataset."""
    if any(soak.inbox.glob("*.npz")) or not (soak.tmp / "arm" / "fired").exists():
        return False
    store = open_store(str(soak.store))
    datasets = DatasetStore(store)
    if not datasets.exists("soak"):
        return False
    from pipeline.runs import list_runs

    runs = list_runs(store, "soak")
    manifest = datasets.manifest("soak")
    return bool(runs) and runs[-1]["dataset_fingerprint"] == manifest["fingerprint"] and len(
        manifest["batches"]) == dropped


def _check(soak: Soak, runs: list[dict[str, Any]], status: int, seconds: float,
           dropped: int) -> None:
    from pipeline.keys import RUN
    from pipeline.runs import list_runs

    store = open_store(str(soak.store))
    manifest = DatasetStore(store).manifest("soak")
    latest = list_runs(store, "soak")[-1]
    labels = store.get(store.read_record(RUN, latest["run_id"])["labels"]).column("label")
    processed = sorted(p.name for p in (soak.inbox / "processed").glob("*.npz"))
    states: dict[str, int] = {}
    for run in runs:
        states[run["state"]["type"]] = states.get(run["state"]["type"], 0) + 1
    log = (soak.tmp / "serve.log").read_text(errors="replace")
    stored = len(manifest["batches"])
    print(f"\nsoak: {len(runs)} cycles ({states}) in {seconds:.0f} s; faults injected: "
          f"{', '.join(soak.faults)}; batches in {dropped}, stored {stored}, clustered "
          f"{len(labels) // PER_BATCH} ({len(labels)} samples labelled), duplicates "
          f"{stored - dropped if stored > dropped else 0}, lost {dropped - min(stored, dropped)}"
          f"; serve exit {status}; lost-server lines "
          f"{log.count('lost the Prefect server')}")
    assert stored == dropped and manifest["n_samples"] == dropped * PER_BATCH
    assert len(labels) == dropped * PER_BATCH
    assert processed == [f"batch-{i:03d}.npz" for i in range(dropped)], processed
    assert not (soak.inbox / "rejected").exists()
    assert states.get("FAILED", 0) >= 1, "the ENOSPC cycle did not fail"
    assert "No space left on device" in log
    assert "Traceback" not in log, log[log.index("Traceback") - 2000:][:6000]
    assert log.count("lost the Prefect server") >= 1 and "answers again" in log
    assert status == 0
