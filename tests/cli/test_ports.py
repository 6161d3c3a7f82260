"""Ports: one a server has just released (connections in ``TIME_WAIT``) is free, one busy for
a moment is tried again, and ``infra/local_server.sh`` trusts a health answer only from the
server it started. ``local_server.sh`` runs here with a stand-in ``prefect`` (a tiny HTTP
server answering ``/api/health``), so each case takes a second or two."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from processes.api_server import check_port
from processes.errors import ProcessError

ROOT = Path(__file__).resolve().parents[2]

FAKE_PREFECT = f"""#!{sys.executable}
import http.server, os, sys
port = int(sys.argv[sys.argv.index("--port") + 1])

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args):
        pass

print("stand-in server on", port, flush=True)
if os.environ.get("FAKE_PREFECT_SILENT"):
    import time
    time.sleep(60)
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def _time_wait_port() -> int:
    """A port whose last server has closed its connections first: they wait in TIME_WAIT,
    and a bind without SO_REUSEADDR is refused for 60 s."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    accepted.close()
    client.close()
    server.close()
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))  # what the old check did: refused
    return port


def test_a_port_just_released_is_free_and_one_in_use_is_refused(monkeypatch):
    port = _time_wait_port()
    monkeypatch.setenv("FASTMICE_API_PORT", str(port))
    assert check_port(wait=0) == port
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setenv("FASTMICE_API_PORT", str(taken.getsockname()[1]))
        with pytest.raises(ProcessError, match=r"cannot listen on 127\.0\.0\.1"):
            check_port(wait=0.5)


def test_a_port_busy_for_a_moment_is_waited_for(monkeypatch):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    threading.Timer(1.0, taken.close).start()
    monkeypatch.setenv("FASTMICE_API_PORT", str(port))
    started = time.monotonic()
    assert check_port(wait=10) == port
    assert 0.5 < time.monotonic() - started < 10


@pytest.fixture
def local_server(tmp_path):
    fake = tmp_path / "prefect"
    fake.write_text(FAKE_PREFECT)
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "FASTMICE_"))}
    env.update(PREFECT=str(fake), PYTHON=sys.executable, FASTMICE_PORT_WAIT="1",
               FASTMICE_SERVER_TIMEOUT="12")
    homes = []

    def run(*args: str) -> subprocess.CompletedProcess:
        home = tmp_path / f"home{len(homes)}"
        homes.append(home)
        return subprocess.run([str(ROOT / "infra" / "local_server.sh"), "start", "--home",
                               str(home), *args], env={**env, **{
                                   k: v for k, v in os.environ.items()
                                   if k.startswith("FAKE_PREFECT")}},
                              capture_output=True, text=True, timeout=60, check=False)

    yield run
    for home in homes:
        subprocess.run([str(ROOT / "infra" / "local_server.sh"), "stop", "--home", str(home)],
                       env=env, capture_output=True, timeout=60, check=False)


def test_local_server_takes_a_port_just_released(local_server):
    port = _time_wait_port()
    result = local_server("--port", str(port))
    assert result.returncode == 0, result.stderr
    assert f"export PREFECT_API_URL=http://127.0.0.1:{port}/api" in result.stdout


def test_local_server_refuses_a_port_given_and_in_use_and_moves_off_the_default(local_server):
    with socket.socket() as taken:
        if _free(4200):  # else someone else holds it: in use all the same
            taken.bind(("127.0.0.1", 4200))
            taken.listen()
        given = local_server("--port", "4200")
        default = local_server()
    assert given.returncode == 1, given.stderr
    assert "port 4200 on 127.0.0.1 is in use after 1 s" in given.stderr, given.stderr
    assert default.returncode == 0, default.stderr
    assert "port 4200 on 127.0.0.1 is in use" in default.stdout
    moved = [line for line in default.stdout.splitlines() if line.startswith("export")]
    assert moved and ":4200/" not in moved[0], default.stdout


def test_local_server_trusts_only_its_own_server_health(local_server, tmp_path):
    """Another process that starts answering /api/health on the port after the port check
    is not this server being ready (before: "healthy", and then the server could not listen)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ["FAKE_PREFECT_SILENT"] = "1"  # the stand-in server never listens
    other = None
    try:
        out: dict[str, subprocess.CompletedProcess] = {}
        thread = threading.Thread(  # local_server.sh waits: in a thread
            target=lambda: out.update(r=local_server("--port", str(port))))
        thread.start()
        time.sleep(4.0)  # past the port check
        other = subprocess.Popen([sys.executable, "-c", FAKE_PREFECT.split("\n", 1)[1],
                                  "--port", str(port)], stdout=subprocess.PIPE, text=True)
        thread.join(90)
    finally:
        os.environ.pop("FAKE_PREFECT_SILENT", None)
        if other is not None:
            other.kill()
    result = out["r"]
    assert result.returncode == 1 and "no /api/health after" in result.stderr, (
        result.stdout, result.stderr)
    assert "healthy" not in result.stdout


def _free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
