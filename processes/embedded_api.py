"""Prefect's embedded API server, tied to the life of the command that started it.

Prefect starts the embedded server as a subprocess and stops it from an ``atexit`` handler,
which a ``SIGKILL``, ``SIGTERM`` or the out-of-memory killer never runs: the server (about
230 MB) would be left behind, its parent being gone. So, the moment the server process
exists:

* a **watchdog** process is started with a pipe from the command as its standard input. The
  command never writes to it; when the command ends, however it ends, the kernel closes the
  pipe, the watchdog reads end-of-file and stops the server (``SIGTERM``, then ``SIGKILL``
  after 5 s), checking first that the pid is still that server (its start time). The
  watchdog ignores ``SIGINT`` and ``SIGTERM`` sent to the whole process group, so it
  outlives the command to do its one job;
* the server is **registered** in ``$PREFECT_HOME/fastmice-api/<pid>.json`` with its owner.
  The next command that starts a server **reaps** any registered server whose owner is gone
  (should the watchdog have been killed with the command, by a ``kill -9`` of both pids).

Nothing here imports Prefect; :mod:`processes.engine` passes the server in.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from storage.locks import owner_alive, process_identity

__all__ = ["guard_server", "reap_stale_servers", "registry"]

_WATCHDOG = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pid, start = int(sys.argv[1]), sys.argv[2]

def running():
    try:
        fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    except OSError:
        return False
    return fields[0] not in "ZX" and fields[19] == start

while sys.stdin.buffer.read(65536):
    pass  # nothing is ever written: this returns at end-of-file, when the command is gone
for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
    if not running():
        break
    os.kill(pid, sig)
    deadline = time.time() + wait
    while running() and time.time() < deadline:
        time.sleep(0.05)
"""

#: The watchdogs' pipes: held open for the life of this process, never written.
_pipes: list[Any] = []


def registry(home: str | os.PathLike[str]) -> Path:
    """The folder where embedded servers are registered with their owners."""
    return Path(home) / "fastmice-api"


def _stop(server: dict[str, Any]) -> None:
    """SIGTERM, then SIGKILL, the process ``server`` (a process identity) while it runs."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        if not owner_alive(server):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(server["pid"]), sig)
        deadline = time.time() + wait
        while owner_alive(server) and time.time() < deadline:
            time.sleep(0.05)


def reap_stale_servers(home: str | os.PathLike[str]) -> list[int]:
    """Stop every registered server whose owning command is gone; the pids stopped."""
    reaped = []
    for entry in sorted(registry(home).glob("*.json")):
        try:
            info = json.loads(entry.read_text())
            server, owner = info["server"], info["owner"]
        except (OSError, ValueError, KeyError, TypeError):
            entry.unlink(missing_ok=True)
            continue
        if owner_alive(owner) is not False:
            continue  # its command still runs (or it belongs to another host)
        if owner_alive(server):
            _stop(server)
            reaped.append(int(server["pid"]))
        entry.unlink(missing_ok=True)
    return reaped


def guard_server(pid: int, home: str | os.PathLike[str]) -> None:
    """Tie the server process ``pid`` to this process: a watchdog and a registry entry."""
    server = process_identity(pid)
    watchdog = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(pid), str(server["start"])],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        close_fds=True)
    _pipes.append(watchdog.stdin)
    entry = registry(home) / f"{pid}.json"
    with contextlib.suppress(OSError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_text(json.dumps({"server": server, "owner": process_identity(),
                                     "watchdog": watchdog.pid}))
        atexit.register(entry.unlink, missing_ok=True)
