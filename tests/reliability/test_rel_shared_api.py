"""The local API server that commands share (fastmice's own Prefect home): a second command
joins the first one's server, and however the commands end (even ``kill -9``), the server
and its idle watch stop by themselves once no command has run for ``FASTMICE_API_IDLE``."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from reliability_kit import OPTIONS, make_data, one_json, run_cli, start_cli, wait_until

from processes.shared_api import shared_folder
from storage.locks import owner_alive

pytestmark = [pytest.mark.slow]

IDLE = 40  # seconds: longer than a command takes to start on 2 loaded cores



def _shared_env(tmp_path: Path) -> dict[str, str]:
    """No Prefect settings of the user's (empty is unset): fastmice's own home, which
    shares a server."""
    return {"FASTMICE_PREFECT_HOME": str(tmp_path / "own-home"), "FASTMICE_API_IDLE": str(IDLE),
            "PREFECT_HOME": "", "PREFECT_API_URL": ""}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("shared"))


def test_commands_share_one_server_that_stops_when_idle_even_after_kill_9(data, tmp_path,
                                                                          battery):
    env = _shared_env(tmp_path)
    folder = shared_folder(tmp_path / "own-home")
    first = one_json(run_cli(["cluster", data["tiny"], "--store", tmp_path / "s1", *OPTIONS,
                              "--json"], **env).stdout)
    info = json.loads((folder / "shared.json").read_text())
    server = info["server"]
    assert first["groups_computed"] > 0 and owner_alive(server)

    # A second command (other data: a flow runs) joins the same server, and is killed -9.
    proc = start_cli(["cluster", data["new"], "--k", "3", "--groups", "3", "--store",
                      tmp_path / "s2"], **env)
    # (registered under its own pid, or its warm child's: processes.warm)
    joined = wait_until(lambda: any((folder / "clients").glob("*.json")), 120)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.communicate()
    same = json.loads((folder / "shared.json").read_text())["server"] == server

    stopped = wait_until(lambda: not owner_alive(server), IDLE + 60)
    cleaned = wait_until(lambda: not (folder / "shared.json").exists(), 20)
    watch_gone = wait_until(lambda: not any("processes.api_idle" in _cmdline(p) and str(folder) in
                                            _cmdline(p) for p in Path("/proc").glob("[0-9]*")),
                            20)
    warm_gone = wait_until(lambda: not any("processes.warm" in _cmdline(p)
                                           for p in _children_of(env)), 20)
    ok = joined and same and stopped and cleaned and watch_gone and warm_gone
    assert battery.record("no orphans", "the shared API server: a second command joins it and "
                          "is killed with SIGKILL", f"same server; it stops after {IDLE} s idle",
                          f"joined {joined}, same server {same}, stopped {stopped}, entry "
                          f"removed {cleaned}, idle watch gone {watch_gone}, warm process gone "
                          f"{warm_gone}", ok)


def _children_of(env: dict[str, str]) -> list[Path]:
    """The processes whose environment names this test's Prefect home."""
    home = f"FASTMICE_PREFECT_HOME={env['FASTMICE_PREFECT_HOME']}".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if home in (proc / "environ").read_bytes().split(b"\0"):
                found.append(proc)
        except OSError:
            continue
    return found


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
