"""Prefect's embedded API server, started so that a failure is reported in seconds.

Prefect's own start-up (``SubprocessASGIServer.start``) restarts a server that exits with
status 3 on a new port, again and again, and otherwise waits for its whole start-up timeout;
the server's output goes to the command's console. Here the same server process is started
on the instance Prefect's client uses, its output goes to a log file, and the start-up is
watched: a server that exits is reported at once in one line naming the reason (the database
and its fix, or the port), a server that does not answer within the timeout likewise.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from processes.embedded_api import guard_server, registry
from processes.errors import ProcessError
from processes.prefect_home import foreign_database

__all__ = ["check_database", "check_port", "database_path", "failure_message",
           "foreign_database_message", "healthy", "launch", "pick_port", "port_message",
           "start_server"]

_FIX = ("use a Prefect home of its own (FASTMICE_PREFECT_HOME=DIR, or PREFECT_HOME=DIR), "
        "upgrade Prefect, or set PREFECT_API_URL to a running server")


def database_path(home: str | os.PathLike[str]) -> Path | None:
    """The SQLite file of the API's database (None for another database)."""
    if "prefect.settings" in sys.modules:
        from prefect.settings import get_current_settings

        url = get_current_settings().server.database.connection_url
        text = url.get_secret_value() if url is not None else None
    else:  # fastmice's own home: only the environment can name another database
        text = (os.environ.get("PREFECT_SERVER_DATABASE_CONNECTION_URL")
                or os.environ.get("PREFECT_API_DATABASE_CONNECTION_URL"))
    if text is None:
        return Path(home) / "prefect.db"
    if not text.startswith("sqlite"):
        return None
    return Path(text.split(":///", 1)[1].split("?", 1)[0])


def foreign_database_message(db: Path, revision: str) -> str:
    """One line: the database ``db`` was migrated by another Prefect, and what to do."""
    from importlib.metadata import version

    return (f"Prefect's database {db} was migrated by another (newer) Prefect version "
            f"(revision {revision}, unknown to prefect {version('prefect')}): {_FIX}.")


def check_database(home: str | os.PathLike[str]) -> None:
    """Refuse, in one line, a SQLite database that this Prefect cannot open."""
    db = database_path(home)
    revision = foreign_database(db) if db is not None else None
    if revision is not None:
        raise ProcessError(foreign_database_message(db, revision))


def port_message(port: int, reason: str | None) -> str:
    """One line: the API server cannot listen on ``port``, and what to do."""
    return (f"Prefect's embedded API server cannot listen on 127.0.0.1:{port} "
            f"({(reason or 'address in use').lower()}): set FASTMICE_API_PORT to a free port or "
            f"unset it, or set PREFECT_API_URL to a running server.")


def failure_message(log: Path, status: int, port: int, home: str) -> str:
    """One line saying why the server exited, from its log."""
    text = log.read_text(errors="replace") if log.exists() else ""
    revision = re.search(r"Can't locate revision identified by '(\w+)'", text)
    db = database_path(home)
    if revision:
        return foreign_database_message(db, revision[1])
    if re.search(r"address already in use|error while attempting to bind", text, re.I):
        return port_message(port, "address already in use")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else "no output"
    return (f"Prefect's embedded API server exited at start-up (status {status}): {last} "
            f"(database {db}; log {log}); {_FIX}.")


def launch(port: int, log: Path, detached: bool = False,
           extra_env: dict[str, str] | None = None) -> subprocess.Popen[Any]:
    """The server process Prefect would start, with its output in ``log`` (in a session of
    its own if ``detached``: a Ctrl-C of the command's terminal does not reach it), and
    ``extra_env``. Prefect need not be imported (its settings, if it is, are passed on as
    Prefect does)."""
    spec = importlib.util.find_spec("prefect")
    app_dir = Path(next(iter(spec.submodule_search_locations))).parent if spec else Path()
    env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
           "PREFECT__SERVER_FINAL": "1"}
    if "prefect.settings" in sys.modules:
        from prefect.settings import get_current_settings

        env.update(get_current_settings().to_environment_variables(exclude_unset=True))
    env.update(extra_env or {})
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--app-dir", str(app_dir),
             "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1",
             "--port", str(port), "--log-level", "error", "--lifespan", "on"],
            env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=detached)


def healthy(url: str) -> bool:
    """Whether the API at ``url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def _can_listen(port: int) -> OSError | None:
    """None if a server can listen on ``port`` now, else why not. The probe sets
    ``SO_REUSEADDR`` as the server does: the connections of a server that has just stopped
    (``TIME_WAIT``, 60 s) do not make a port busy."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc
    return None


def check_port(wait: float = 5.0) -> int | None:
    """Refuse, in one line, a ``FASTMICE_API_PORT`` still in use after ``wait`` seconds (a
    port busy for a moment is tried again); the port (or None)."""
    setting = os.environ.get("FASTMICE_API_PORT")
    if not setting:
        return None
    deadline = time.monotonic() + wait
    while (error := _can_listen(int(setting))) is not None:
        if time.monotonic() >= deadline:
            raise ProcessError(port_message(int(setting), error.strerror))
        time.sleep(0.25)
    return int(setting)


def pick_port(server: Any = None) -> int:
    """``FASTMICE_API_PORT``, else a free port (of Prefect's range, given its ``server``)."""
    setting = os.environ.get("FASTMICE_API_PORT")
    if setting:
        return check_port()
    if server is not None:
        return server.find_available_port()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(server: Any, home: str, timeout: float) -> None:
    """Start ``server`` (the ``SubprocessASGIServer`` Prefect's client uses) and wait until
    it answers; raise :class:`ProcessError` in one line as soon as it exits, or after
    ``timeout`` seconds. ``FASTMICE_API_PORT`` fixes its port."""
    port = pick_port(server)
    folder = registry(home)
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"server-{os.getpid()}.log"
    log.unlink(missing_ok=True)
    process = launch(port, log)
    guard_server(process.pid, home)
    server.port, server.server_process, server.running = port, process, True
    deadline = time.monotonic() + timeout
    while not healthy(server.api_url):
        status = process.poll()
        if status is not None or time.monotonic() > deadline:
            server.stop()
            if status is None:
                raise ProcessError(f"Prefect's embedded API server gave no answer within "
                                   f"{timeout:.0f} s (log {log}); set PREFECT_API_URL to a "
                                   f"running server, or retry on a less loaded machine.")
            raise ProcessError(failure_message(log, status, port, home))
        time.sleep(0.1)
    atexit.register(server.stop)
    atexit.register(log.unlink, missing_ok=True)
