"""The ``fastmice`` console script: run the command in a warm process when one is ready.

A command that runs a flow pays for importing numpy, scipy, scikit-learn, Prefect and
matplotlib (about 3 s on a quiet 2-core machine, 5-10 s on a busy one) before it does any
work. When commands share fastmice's local API server (:mod:`cli.shared_api`), the first
such command also starts a *warm process* (:mod:`cli.warm`) that has imported all of it and
lives as long as the server does. Later commands connect to it over a Unix socket, hand it
their arguments, working directory, environment and standard streams, and it runs each in
a forked child with everything already imported: the command's output, exit status,
Ctrl-C and ``kill -9`` behave as for a command run in place.

This module imports only the standard library (and :mod:`cli.prefect_home`, which imports
nothing else): it decides in milliseconds whether a warm process can take the command, and
otherwise runs it here (:func:`cli.main.main`). ``FASTMICE_WARM=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from cli.warm_socket import warm_socket

__all__ = ["main", "wait_for_warm_process", "warm_socket"]

def wait_for_warm_process(environ: Mapping[str, str], timeout: float = 120) -> bool:
    """Wait until a warm process for commands in ``environ`` listens; whether one does."""
    path = warm_socket(environ)
    deadline = time.monotonic() + timeout
    while path is not None and not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return path is not None and path.exists()


def _private(folder: Path) -> bool:
    """Whether ``folder`` is ours alone (a socket there is not someone else's trap)."""
    try:
        stat = folder.stat()
    except OSError:
        return False
    return stat.st_uid == os.getuid() and not stat.st_mode & 0o077


def _send_request(connection: socket.socket, argv: Sequence[str]) -> None:
    """Arguments, working directory, environment and umask, with the standard streams."""
    umask = os.umask(0)
    os.umask(umask)
    payload = json.dumps({"argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ),
                          "umask": umask}).encode()
    message = struct.pack("!I", len(payload)) + payload
    sent = socket.send_fds(connection, [message], [0, 1, 2])
    connection.sendall(message[sent:])


def _relay(connection: socket.socket) -> int:
    """Forward signals to the command's process until it says its exit status."""
    reader = connection.makefile("rb")
    child: list[int] = []

    def forward(signum: int, frame: object) -> None:
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child[0], signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    for line in reader:
        message = json.loads(line)
        if "pid" in message:
            child.append(int(message["pid"]))
        elif "exit" in message:
            return int(message["exit"])
    print("fastmice: the command's process ended without an exit status (killed?); rerun "
          "the same command to resume.", file=sys.stderr)
    return 1


def _run_warm(argv: Sequence[str]) -> int | None:
    """The exit status of the command run by a warm process; None if none took it."""
    if any(arg in ("-v", "--verbose") for arg in argv):
        return None  # Prefect's log levels are set when it is imported
    if argv[:1] == ["daemon"]:
        return None  # it may stop the warm process itself
    path = warm_socket()
    if path is None or not _private(path.parent):
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(2.0)
        connection.connect(str(path))
        _send_request(connection, argv)
        connection.settimeout(None)
    except OSError:
        connection.close()
        return None  # none there, or one that is going away: run it here
    with connection:
        return _relay(connection)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fastmice`` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["daemon"] and not any(arg in ("-h", "--help") for arg in argv):
        from cli.daemons import main as daemon  # needs none of the command line's imports

        return daemon(argv[1:])
    status = _run_warm(argv)
    if status is not None:
        return status
    environ = dict(os.environ)  # before the command sets Prefect's variables
    from cli.main import main as run_here

    status = run_here(argv)
    from cli.engine import joined_shared_server

    if joined_shared_server():
        from cli.daemons import say_left_running
        from cli.shared_api import idle_seconds, started
        from cli.warm import spawn

        server = started["server"]["pid"] if started else None
        say_left_running(server, spawn(environ), idle_seconds())
    return status


if __name__ == "__main__":
    sys.exit(main())
