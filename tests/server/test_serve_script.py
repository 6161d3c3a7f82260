"""``infra/serve.sh`` as the README shows it: with no ``PREFECT_API_URL`` and no activated
venv it starts a local Prefect server itself, serves, and on Ctrl-C stops the serve process
and then that server, without a ``RuntimeWarning`` (``coroutine ... was never awaited``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.server, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_serve_script_starts_a_server_and_ctrl_c_stops_both(tmp_path):
    home, port = tmp_path / "home", _free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "VIRTUAL_ENV", "FASTMICE_"))}
    # No activated venv: the script must find the repository's .venv itself.
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    env["FASTMICE_STORE"] = str(tmp_path / "store")
    log = tmp_path / "serve.out"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(ROOT / "infra" / "serve.sh"), "--inbox", str(tmp_path / "inbox"),
             "--dataset", "incoming", "--k", "3", "--cron", "*/30 * * * *",
             "--home", str(home), "--port", str(port)],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while "being served" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(1)
        server_pid = int((home / "server.pid").read_text())
        assert _alive(server_pid)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in its terminal does
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = log.read_text(errors="replace")
    assert f"export PREFECT_API_URL=http://127.0.0.1:{port}/api" in text
    assert "never awaited" not in text and "Traceback" not in text, text[-3000:]
    deadline = time.monotonic() + 30
    while _alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _alive(server_pid), "the server serve.sh started was left running"
    assert not (home / "server.pid").exists()
