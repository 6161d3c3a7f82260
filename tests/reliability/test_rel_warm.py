"""The warm process (:mod:`processes.warm`): in fastmice's own Prefect home, a command after the
first runs in a forked child of a process that has everything imported. Its output, exit
status, Ctrl-C and ``kill -9`` must be those of a command run in place, and it must never
outlive the shared API server."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest
from reliability_kit import OPTIONS, labels_of, make_data, one_json, run_cli, start_cli, wait_until

from cli.launch import warm_socket
from processes.shared_api import shared_folder
from storage import open_store

pytestmark = [pytest.mark.slow]

IDLE = 60  # seconds: the shared server (and so the warm process) outlives every case



def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """Data and a command environment whose first command has started the warm process."""
    folder = tmp_path_factory.mktemp("warm")
    data = make_data(folder)
    env = {"FASTMICE_PREFECT_HOME": str(folder / "own-home"), "FASTMICE_API_IDLE": str(IDLE),
           "PREFECT_HOME": "", "PREFECT_API_URL": ""}
    first = run_cli(["cluster", data["tiny"], "--store", folder / "first", *OPTIONS, "--json"],
                    **env)
    socket_path = warm_socket({**os.environ, **_command_env(env)})
    assert socket_path is not None
    assert wait_until(socket_path.exists, 120), f"no warm process: {first.stderr[-2000:]}"
    yield {"data": data, "env": env, "folder": folder, "socket": socket_path}
    server = json.loads((shared_folder(folder / "own-home") / "shared.json").read_text())
    os.kill(server["server"]["pid"], signal.SIGTERM)  # the warm process must follow it
    assert wait_until(lambda: not socket_path.exists(), 30), "the warm process outlived its server"


def _command_env(extra: dict[str, str]) -> dict[str, str]:
    from reliability_kit import env

    return env(**extra)


def _warm_pid(stderr: str) -> int | None:
    match = re.search(r"run by the warm process \d+ in process (\d+)", stderr)
    return int(match[1]) if match else None


def test_a_warm_command_prints_and_returns_what_a_command_run_in_place_does(session, tmp_path):
    data, env = session["data"], session["env"]
    args = ["cluster", data["tiny"], "--store", tmp_path / "s", *OPTIONS, "--json"]
    warm = run_cli(args, **env, FASTMICE_DEBUG="1")
    assert _warm_pid(warm.stderr), warm.stderr[-2000:]
    in_place = run_cli(["cluster", data["tiny"], "--store", tmp_path / "t", *OPTIONS, "--json"],
                       **env, FASTMICE_WARM="0", FASTMICE_DEBUG="1")
    assert _warm_pid(in_place.stderr) is None
    a, b = one_json(warm.stdout), one_json(in_place.stdout)
    assert a["groups_computed"] == b["groups_computed"] == 3 and a["scores"] == b["scores"]
    labels = [labels_of(open_store(str(tmp_path / name)), out["run_id"])
              for name, out in (("s", a), ("t", b))]
    assert (labels[0] == labels[1]).all()

    refused = run_cli(["show", "no-such-run", "--store", tmp_path / "s"], check=False, **env)
    here = run_cli(["show", "no-such-run", "--store", tmp_path / "s"], check=False, **env,
                   FASTMICE_WARM="0")
    assert refused.returncode == here.returncode != 0
    assert refused.stderr == here.stderr and "no-such-run" in refused.stderr


def test_kill_9_of_a_warm_command_kills_its_process_and_the_rerun_resumes(session, tmp_path):
    data, env = session["data"], session["env"]
    args = ["cluster", data["tiny"], "--store", tmp_path / "s", "--k", "3", "--groups", "12",
            "--anchors", "20", "--seed", "7", "--n-jobs", "1"]
    proc = start_cli(args, **env, FASTMICE_DEBUG="1", FASTMICE_FAULT="compute:base-labels:1+:sleep")
    line = ""
    while _warm_pid(line) is None and proc.poll() is None:
        line = proc.stderr.readline()
    child = _warm_pid(line)
    assert child is not None and _alive(child)
    time.sleep(3)  # into the flow
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert wait_until(lambda: not _alive(child), 15), "the command's process outlived it"
    rerun = one_json(run_cli([*args, "--json"], **env).stdout)
    assert rerun["groups_computed"] + rerun["groups_reused"] == 12


def test_ctrl_c_reaches_a_warm_command(session, tmp_path):
    data, env = session["data"], session["env"]
    proc = start_cli(["cluster", data["tiny"], "--store", tmp_path / "s", "--k", "3",
                      "--groups", "12", "--anchors", "20", "--seed", "8", "--n-jobs", "1"],
                     **env, FASTMICE_DEBUG="1", FASTMICE_FAULT="compute:base-labels:1+:sleep")
    line = ""
    while _warm_pid(line) is None and proc.poll() is None:
        line = proc.stderr.readline()
    assert _warm_pid(line) is not None
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-2000:]
    assert "interrupted; rerun the same command to resume" in stderr


def test_a_changed_environment_or_code_gets_no_stale_warm_process(session):
    env = _command_env(session["env"])
    same = warm_socket({**os.environ, **env})
    assert same == session["socket"]
    assert warm_socket({**os.environ, **env, "OMP_NUM_THREADS": "7"}) != same
    assert warm_socket({**os.environ, **env, "FASTMICE_STORE": "elsewhere"}) == same
    assert warm_socket({**os.environ, **env, "FASTMICE_WARM": "0"}) is None
    assert warm_socket({**os.environ, **env, "PREFECT_API_URL": "http://x:1/api"}) is None
