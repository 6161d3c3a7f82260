"""Start-up never hangs: Prefect's embedded API failing to start is reported in one line,
within seconds, naming the database (or the port) and the fix; and fastmice keeps Prefect's
database in a home of its own unless the user chose one.

Each case runs the real command (or the real server) in a subprocess with no
``PREFECT_API_URL``; the seconds each failure took to be reported are printed (``-s``).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline.ingest import save_views_dir
from processes.prefect_home import choose_prefect_home, foreign_database, known_revisions

ROOT = Path(__file__).resolve().parents[2]
#: A revision no Prefect of ours knows, as a newer Prefect's migration would write.
FOREIGN_REVISION = "f0f0f0f0f0f0"
#: Reported within this many seconds (Prefect's own start-up waited 120 s and more): a
#: database or port refused before any server starts, and a server that exits at start-up
#: (its process imports Prefect's whole server first: 10-60 s on 2 cores at load 8-13).
BOUND, BOUND_SERVER = 30.0, 90.0


def _foreign_home(folder: Path) -> Path:
    """A Prefect home whose prefect.db was migrated by a Prefect newer than ours."""
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "prefect.db") as db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
                   "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))")
        db.execute("INSERT INTO alembic_version VALUES (?)", (FOREIGN_REVISION,))
    return folder


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    for name in ("PREFECT_API_URL", "FASTMICE_STORE", "FASTMICE_DEBUG", "FASTMICE_API_PORT"):
        env.pop(name, None)
    env.update(extra)
    return env


def _timed(argv: list[str], **extra: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = subprocess.run(argv, cwd=ROOT, env=_env(**extra), capture_output=True, text=True,
                            timeout=300, check=False)
    return result, time.monotonic() - started


@pytest.fixture
def tiny(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 40)
    Xs = [rng.normal(size=(120, 4)) + y[:, None], rng.normal(size=(120, 3)) + y[:, None]]
    save_views_dir(tmp_path / "tiny", Xs, y)
    return tmp_path / "tiny"


def test_the_revision_check_knows_ours_and_not_a_newer_one(tmp_path):
    assert len(known_revisions()) > 50
    home = _foreign_home(tmp_path / "home")
    assert foreign_database(home / "prefect.db") == FOREIGN_REVISION
    with sqlite3.connect(home / "prefect.db") as db:
        db.execute("UPDATE alembic_version SET version_num = ?", (sorted(known_revisions())[0],))
    assert foreign_database(home / "prefect.db") is None
    assert foreign_database(tmp_path / "missing.db") is None


def test_a_foreign_database_fails_the_command_in_one_line(tmp_path, tiny):
    home = _foreign_home(tmp_path / "prefect-home")
    result, seconds = _timed([sys.executable, "-m", "cli", "cluster", str(tiny), "--k", "3",
                              "--groups", "2", "--store", str(tmp_path / "store")],
                             PREFECT_HOME=str(home))
    print(f"\nforeign database: reported in {seconds:.1f} s (load {os.getloadavg()[0]:.1f})")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, result.stderr[-2000:]
    assert len(lines) == 1, result.stderr[-2000:]
    assert str(home / "prefect.db") in lines[0] and FOREIGN_REVISION in lines[0]
    assert "PREFECT_HOME" in lines[0] and "PREFECT_API_URL" in lines[0]
    assert not (tmp_path / "store").exists()  # refused before anything was written
    assert seconds < BOUND


SERVER = """
import socket, sys
from processes.api_server import start_server
from processes.errors import ProcessError

class Server:  # what start_server needs of Prefect's SubprocessASGIServer
    port = server_process = None
    running = False
    def find_available_port(self):  # the port given, as if taken after Prefect's probe
        return int(sys.argv[2])
    @property
    def api_url(self):
        return f"http://127.0.0.1:{self.port}/api"
    def stop(self):
        if self.server_process is not None:
            self.server_process.kill()

try:
    start_server(Server(), sys.argv[1], 120)
except ProcessError as exc:
    print(exc)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_that_dies_on_a_foreign_database_is_reported_when_it_exits(tmp_path):
    """The server itself started on the database (no check first): its exit is seen."""
    home = _foreign_home(tmp_path / "prefect-home")
    result, seconds = _timed([sys.executable, "-c", SERVER, str(home), str(_free_port())],
                             PREFECT_HOME=str(home))
    print(f"\nserver exiting on a foreign database: reported in {seconds:.1f} s "
          f"(load {os.getloadavg()[0]:.1f})")
    assert result.returncode == 0, result.stderr[-2000:]
    assert str(home / "prefect.db") in result.stdout and FOREIGN_REVISION in result.stdout
    assert seconds < BOUND_SERVER


def test_a_port_that_cannot_be_bound_fails_the_command_in_one_line(tmp_path, tiny):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result, seconds = _timed(
            [sys.executable, "-m", "cli", "cluster", str(tiny), "--k", "3", "--groups", "2",
             "--store", str(tmp_path / "store")],
            PREFECT_HOME=str(tmp_path / "prefect-home"), FASTMICE_API_PORT=str(port))
    print(f"\nport {port} in use: reported in {seconds:.1f} s (load {os.getloadavg()[0]:.1f})")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, result.stderr[-2000:]
    assert len(lines) == 1, result.stderr[-2000:]
    assert f"127.0.0.1:{port}" in lines[0] and "FASTMICE_API_PORT" in lines[0]
    assert seconds < BOUND
    assert not (tmp_path / "store").exists()  # refused before anything was written


def test_a_server_that_cannot_bind_its_port_is_reported_when_it_exits(tmp_path):
    """The port is taken after it was chosen: the server itself fails to bind, and exits."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result, seconds = _timed([sys.executable, "-c", SERVER, str(tmp_path / "home"),
                                  str(port)], PREFECT_HOME=str(tmp_path / "home"))
    print(f"\nserver on port {port} in use: reported in {seconds:.1f} s "
          f"(load {os.getloadavg()[0]:.1f})")
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"cannot listen on 127.0.0.1:{port} (address already in use)" in result.stdout
    assert seconds < BOUND_SERVER


def test_fastmice_uses_a_prefect_home_of_its_own_unless_the_user_chose_one(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    env = {"FASTMICE_PREFECT_HOME": str(tmp_path / "mine")}
    assert choose_prefect_home(env) == tmp_path / "mine"
    assert env["PREFECT_HOME"] == str(tmp_path / "mine")
    env = {}
    assert choose_prefect_home(env) == tmp_path / ".fastmice" / "prefect"
    for chosen in ({"PREFECT_API_URL": "http://127.0.0.1:4200/api"},
                   {"PREFECT_HOME": str(tmp_path / "theirs")},
                   {"PREFECT_PROFILE": "work"}):
        env = dict(chosen)
        assert choose_prefect_home(env) is None
        assert env == chosen
    profiles = tmp_path / ".prefect" / "profiles.toml"
    profiles.parent.mkdir()
    profiles.write_text('active = "work"\n[profiles.work]\n'
                        'PREFECT_API_URL = "http://10.0.0.1:4200/api"\n')
    assert choose_prefect_home({}) is None
    profiles.write_text('active = "ephemeral"\n[profiles.ephemeral]\n'
                        'PREFECT_SERVER_ALLOW_EPHEMERAL_MODE = "true"\n')
    assert choose_prefect_home({}) == tmp_path / ".fastmice" / "prefect"


def test_flow_runs_send_heartbeats_only_to_a_prefect_the_user_chose(prefect_api):
    """fastmice's own home: no heartbeat thread (its join cost each flow run up to 1 s);
    a server or home the user chose: Prefect's default, which its automations may use."""
    import threading

    from prefect import flow
    from prefect.settings import get_current_settings

    from processes.engine import _without_heartbeats

    def heartbeat_threads() -> int:  # Prefect's: Thread(target=context.run, args=(loop,))
        return sum(1 for t in threading.enumerate()
                   if getattr((getattr(t, "_args", ()) or (None,))[0], "__name__", "")
                   == "heartbeat_loop")

    @flow
    def probe() -> tuple[object, int]:
        return get_current_settings().flows.heartbeat_frequency, heartbeat_threads()

    with _without_heartbeats(True):
        assert probe() == (None, 0)
    with _without_heartbeats(False):
        frequency, running = probe()
    assert frequency == get_current_settings().flows.heartbeat_frequency is not None
    assert running == 1
