"""A local Prefect API server that fastmice commands share, and that stops itself when idle.

In fastmice's own Prefect home (:mod:`processes.prefect_home`; or wherever
``FASTMICE_SHARED_API=1``), the first command that needs Prefect's API starts the server in
a session of its own and leaves it running; later commands join it and skip the start-up
(seconds to tens of seconds on 2 busy cores). There is one such server per *key*, the
Prefect version and fastmice's ``CODE_VERSION`` (:func:`processes.prefect_home.server_key`), in
``<home>/fastmice-api/shared/<key>/`` with its own SQLite database: a command never joins a
server of another key. Each command registers itself as a client
(``<home>/fastmice-api/shared/<key>/clients/<pid>.json``, removed at exit); an idle watch
(:mod:`processes.api_idle`, a detached process) stops the server once no client has run for
``FASTMICE_API_IDLE`` seconds (default 600). A command killed by ``kill -9`` leaves an entry
whose process is gone, which the watch ignores: the server still stops when idle, and
nothing else is left (a half-started server is stopped the same way). The server is also
registered for ``fastmice daemon status|stop`` (:mod:`processes.daemons`).

A start-up failure is reported as for a command's own server (:mod:`processes.api_server`): in
one line, as soon as the server process exits.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from processes.api_server import failure_message, healthy, launch, pick_port
from processes.daemons import register
from processes.embedded_api import registry
from processes.errors import ProcessError
from processes.prefect_home import server_key
from storage.locks import flock_file, owner_alive, process_identity

__all__ = ["database_home", "idle_seconds", "join_shared_server", "shared_folder",
           "started"]

#: The shared server this command started (empty if it joined one, or started none).
started: dict[str, Any] = {}

ROOT = Path(__file__).resolve().parents[1]


def shared_folder(home: str | os.PathLike[str]) -> Path:
    """Where the shared server of Prefect home ``home`` for this environment's key
    (:func:`processes.prefect_home.server_key`: Prefect's and fastmice's code versions) is
    registered; a server of another key is never joined."""
    return registry(home) / "shared" / server_key()


def database_home(home: str | os.PathLike[str]) -> Path:
    """The folder of the shared server's SQLite database (``prefect.db``) for ``home``."""
    folder = shared_folder(home)
    return folder if _database_env(folder) else Path(home)


def _database_env(folder: Path) -> dict[str, str]:
    """The shared server's database: ``FOLDER/prefect.db``, one per key (a Prefect of
    another version never migrates it), unless a database URL is set."""
    if (os.environ.get("PREFECT_SERVER_DATABASE_CONNECTION_URL")
            or os.environ.get("PREFECT_API_DATABASE_CONNECTION_URL")):
        return {}
    return {"PREFECT_SERVER_DATABASE_CONNECTION_URL":
            f"sqlite+aiosqlite:///{folder / 'prefect.db'}"}


def idle_seconds() -> float:
    """``FASTMICE_API_IDLE``: seconds without a command before the shared server stops."""
    return float(os.environ.get("FASTMICE_API_IDLE", "600"))


def _start(folder: Path) -> tuple[dict[str, Any], subprocess.Popen[Any]]:
    """Launch the server and its idle watch, detached; write ``shared.json``."""
    port = pick_port()
    log = folder / "shared-server.log"
    log.unlink(missing_ok=True)
    process = launch(port, log, detached=True, extra_env=_database_env(folder))
    info = {"server": process_identity(process.pid), "port": port, "log": str(log)}
    started.update(info)
    register("server", {**info, "folder": str(folder), "idle": idle_seconds(),
                        "used": str(folder / "last-used")})
    tmp = folder / f".shared.json.{os.getpid()}"
    tmp.write_text(json.dumps(info))
    os.replace(tmp, folder / "shared.json")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    subprocess.Popen([sys.executable, "-m", "processes.api_idle", str(folder), str(idle_seconds())],
                     env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    return info, process


def _join(folder: Path, timeout: float
          ) -> tuple[dict[str, Any], subprocess.Popen[Any] | None]:
    """Under the folder's lock: the running shared server, or a new one; register this
    command as its client."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "clients").mkdir(exist_ok=True)
    with flock_file(folder / "shared.lock", timeout=timeout):
        try:
            info: dict[str, Any] | None = json.loads((folder / "shared.json").read_text())
        except (OSError, ValueError):
            info = None
        process = None
        if info is None or not owner_alive(info["server"]):
            info, process = _start(folder)
        client = folder / "clients" / f"{os.getpid()}.json"
        client.write_text(json.dumps(process_identity()))
        atexit.register(client.unlink, missing_ok=True)
    return info, process


def join_shared_server(home: str, timeout: float) -> str:
    """The API URL of the shared server of ``home``, started if none runs, once it answers;
    :class:`ProcessError` in one line if it exits first or gives no answer within
    ``timeout`` seconds. Prefect need not be imported."""
    folder = shared_folder(home)
    info, process = _join(folder, timeout)
    port = info["port"]
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + timeout
    while not healthy(url):
        if process is not None:
            status = process.poll()
        else:
            status = None if owner_alive(info["server"]) else -1
        if status is not None:
            raise ProcessError(failure_message(Path(info["log"]), status, port,
                                               str(database_home(home))))
        if time.monotonic() > deadline:
            raise ProcessError(f"The shared Prefect API server (log {info['log']}) gave no "
                               f"answer within {timeout:.0f} s; set PREFECT_API_URL to a "
                               f"running server, or retry on a less loaded machine.")
        time.sleep(0.1)
    return url
