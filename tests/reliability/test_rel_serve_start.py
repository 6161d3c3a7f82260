"""The first-start crash: the Prefect server dies (SIGKILL) the moment the serve process has
connected to it, while it applies its deployments. Before, serve ended in a ~90-line traceback
(``httpx.ConnectError`` from Prefect's runner); now it says so in one line, waits, and
serves anew once the server is back (started again 3 s later on the same database)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from test_rel_serve_soak import Soak, _ok

pytestmark = [pytest.mark.slow, pytest.mark.server]


def _connected(port: int) -> bool:
    """An established TCP connection to ``port`` on this host (serve has talked to it)."""
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = row.split()
        if fields[3] == "01" and fields[2].endswith(f":{port:04X}"):
            return True
    return False


def test_a_server_killed_while_serve_starts_is_waited_for_and_served_again(tmp_path):
    soak = Soak(tmp_path)
    soak.inbox.mkdir()
    try:
        soak.start_server()
        soak.wait("server health", lambda: _ok(soak.url), 180)
        soak.start_serve()
        soak.wait("serve connects", lambda: _connected(soak.port), 180)
        os.killpg(soak.server.pid, signal.SIGKILL)
        soak.server.wait(30)
        soak.wait("serve says the server is lost", lambda: "lost the" in soak.log(), 60)
        time.sleep(3.0)
        soak.start_server()
        soak.wait("serving anew", lambda: "answers again" in soak.log()
                  and soak.log(100_000).count("being served") >= 1, 240)
        soak.serve.send_signal(signal.SIGINT)
        status = soak.serve.wait(60)
    finally:
        soak.stop()
    log = soak.log(100_000)
    print("\n" + "\n".join(line for line in log.splitlines() if "fastmice serve" in line))
    assert status == 0 and "Traceback" not in log, log[-3000:]
    assert log.index("answers again") < log.rindex("being served")
