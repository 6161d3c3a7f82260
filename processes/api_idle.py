"""The idle watch of the shared local API server (:mod:`processes.shared_api`), run as its own
detached process: ``python -m processes.api_idle FOLDER IDLE_SECONDS``.

Every few seconds it looks at the commands registered as the server's clients
(``FOLDER/clients/<pid>.json``): an entry whose command is gone (even by ``kill -9``) is
removed; with no live client for ``IDLE_SECONDS``, it stops the server (SIGTERM, then
SIGKILL) and removes its entry (``FOLDER/shared.json``), under the lock the commands take to
join or start a server, so that no command joins a server that is being stopped. It also
ends when the server ends for any other reason.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from processes.embedded_api import _stop
from storage.locks import flock_file, owner_alive

__all__ = ["live_clients", "watch"]


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def live_clients(folder: Path) -> int:
    """How many registered commands still run; entries of commands that are gone are
    removed."""
    alive = 0
    for entry in (folder / "clients").glob("*.json"):
        owner = _read(entry)
        if owner is not None and owner_alive(owner) is not False:
            alive += 1
        else:
            entry.unlink(missing_ok=True)
    return alive


def watch(folder: Path, idle: float) -> None:
    """Stop the shared server of ``folder`` after ``idle`` seconds without a live client."""
    info = _read(folder / "shared.json")
    if info is None:
        return
    server, last_used = info["server"], time.monotonic()
    used = folder / "last-used"  # its time: the last command's, for `fastmice daemon status`
    used.touch()
    while owner_alive(server):
        time.sleep(min(5.0, max(idle / 5, 0.2)))
        if live_clients(folder):
            last_used = time.monotonic()
            with contextlib.suppress(OSError):
                used.touch()
            continue
        if time.monotonic() - last_used < idle:
            continue
        with flock_file(folder / "shared.lock"):
            if live_clients(folder):  # a command joined meanwhile
                last_used = time.monotonic()
                continue
            _stop(server)
            if (_read(folder / "shared.json") or {}).get("server") == server:
                (folder / "shared.json").unlink(missing_ok=True)
        return
    with flock_file(folder / "shared.lock"), contextlib.suppress(OSError):
        if (_read(folder / "shared.json") or {}).get("server") == server:
            (folder / "shared.json").unlink()


if __name__ == "__main__":
    watch(Path(sys.argv[1]), float(sys.argv[2]))
