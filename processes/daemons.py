"""The processes fastmice leaves running for later commands: their registry, status and stop.

Two kinds outlive the command that started them, both for this user only:

* the **shared Prefect API server** of a Prefect home and key (:mod:`processes.shared_api`),
  which stops after ``FASTMICE_API_IDLE`` seconds (600) without a command;
* a **warm process** per environment (:mod:`processes.warm`), which stops with that server,
  or after the same idle time.

Each registers itself in this user's runtime folder
(:func:`processes.prefect_home.runtime_folder`, ``<kind>-<pid>.json``); the time of its last
command is the modification time of the file named ``used`` in its entry. :func:`daemons`
lists them with their key, resident memory, age and idle timer; :func:`stop_daemon` stops one
(the server under the lock commands take to join it, so that none joins a server being
stopped). ``fastmice daemon status|stop`` (:mod:`cli.commands.daemon`) prints them. Nothing
here imports Prefect.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from processes.prefect_home import runtime_folder, server_key
from storage.locks import flock_file, owner_alive

__all__ = ["daemons", "register", "stop_daemon", "used_stamp"]


def register(kind: str, info: dict[str, Any]) -> Path:
    """Write this user's entry of a process left running (``info["server"]``, or this
    process, is its identity); the entry's path."""
    from storage.locks import process_identity

    folder = runtime_folder()
    folder.mkdir(mode=0o700, exist_ok=True)
    identity = info.get("server") if kind == "server" else process_identity()
    entry = folder / f"{kind}-{identity['pid']}.json"
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"kind": kind, "key": server_key(), "process": identity,
                               "started": time.time(), **info}))
    os.replace(tmp, entry)
    return entry


def used_stamp(socket_path: Path) -> Path:
    """The file whose modification time is a warm process's last command."""
    return socket_path.with_suffix(".used")


def _rss_mb(pid: int) -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


def daemons() -> list[dict[str, Any]]:
    """This user's processes left running, each with ``rss_mb``, ``age_s``, ``idle_s`` (since
    the last command) and ``stops_in_s``; entries of processes gone are removed."""
    found = []
    now = time.time()
    for entry in sorted(runtime_folder().glob("*.json")):
        try:
            info = json.loads(entry.read_text())
            alive = owner_alive(info["process"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not alive:
            entry.unlink(missing_ok=True)
            continue
        try:
            used = Path(info["used"]).stat().st_mtime
        except (OSError, KeyError):
            used = info["started"]
        pid = int(info["process"]["pid"])
        idle = max(0.0, now - used)
        found.append({**info, "pid": pid, "entry": str(entry), "rss_mb": _rss_mb(pid),
                      "age_s": now - info["started"], "idle_s": idle,
                      "stops_in_s": max(0.0, float(info.get("idle", 600)) - idle)})
    return found


def stop_daemon(info: dict[str, Any]) -> None:
    """Stop one process of :func:`daemons` (SIGTERM, then SIGKILL) and remove its entries."""
    from processes.embedded_api import _stop

    if info["kind"] == "server":
        folder = Path(info["folder"])
        with flock_file(folder / "shared.lock", timeout=30):
            _stop(info["process"])
            with contextlib.suppress(OSError, ValueError):
                if json.loads((folder / "shared.json").read_text())["server"] == info["process"]:
                    (folder / "shared.json").unlink()
    else:
        _stop(info["process"])
        for path in (Path(info["socket"]), Path(info["used"])):
            path.unlink(missing_ok=True)
    Path(info["entry"]).unlink(missing_ok=True)
