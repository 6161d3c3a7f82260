"""No orphans: a command killed in any way leaves no Prefect server process behind.

These cases start the real embedded API server (no ``PREFECT_API_URL``), each in its own
``PREFECT_HOME``, and kill the command as soon as the server process exists.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_kit import OPTIONS, make_data, start_cli, wait_until

from processes.embedded_api import reap_stale_servers, registry
from storage.locks import owner_alive, process_identity

pytestmark = [pytest.mark.slow]


def _children(pid: int) -> list[tuple[int, str]]:
    """``(pid, command line)`` of the processes whose parent is ``pid``."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rpartition(")")[2].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append((int(stat.parent.name), cmdline))
    return out



@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("orphans"))


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_command_leaves_no_server(sig, data, tmp_path, battery):
    proc = start_cli(["cluster", data["tiny"], "--store", tmp_path / "store", *OPTIONS],
                     PREFECT_HOME=str(tmp_path / "prefect-home"))
    try:
        found: list = []
        assert wait_until(lambda: found.extend(
            p for p in _children(proc.pid) if "uvicorn" in p[1]) or found, 90), \
            "the command started no embedded server"
        server = found[0][0]
        identity = process_identity(server)
        watchdogs = [p for p, cmd in _children(proc.pid) if "-I -S -c" in cmd]
        proc.send_signal(sig)
        proc.wait(timeout=60)
        gone = wait_until(lambda: not owner_alive(identity), 20)
        watchdog_gone = wait_until(lambda: all(not Path(f"/proc/{w}").exists() for w in watchdogs),
                              20)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    ok = gone and watchdog_gone and len(watchdogs) == 1
    assert battery.record("no orphans", f"`fastmice cluster` killed with {sig.name} while "
                          "Prefect's embedded server runs", "no server process left",
                          f"status {proc.returncode}; server "
                          f"{'gone' if gone else 'STILL RUNNING'}; watchdog "
                          f"{'gone' if watchdog_gone else 'left'}", ok)


def test_a_stale_server_is_reaped_on_the_next_start(tmp_path, battery):
    home = tmp_path / "home"
    registry(home).mkdir(parents=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_owner = {**process_identity(), "pid": int(gone.stdout), "start": "1"}
    stale = subprocess.Popen(["sleep", "600"])
    alive = subprocess.Popen(["sleep", "600"])
    try:
        for proc, owner in ((stale, dead_owner), (alive, process_identity())):
            (registry(home) / f"{proc.pid}.json").write_text(json.dumps(
                {"server": process_identity(proc.pid), "owner": owner}))
        reaped = reap_stale_servers(home)
        stale.wait(timeout=10)
        ok = reaped == [stale.pid] and alive.poll() is None and \
            sorted(p.name for p in registry(home).iterdir()) == [f"{alive.pid}.json"]
    finally:
        for proc in (stale, alive):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert battery.record("no orphans", "a registered server whose command is gone (its "
                          "watchdog killed too), at the next start", "stopped; a server whose "
                          "command runs is left alone", f"reaped {len(reaped)}, kept 1", ok)
