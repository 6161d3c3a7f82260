"""The command's side of the warm process (:mod:`processes.warm`): hand it a command.

A command connects to the warm process of its environment over a Unix socket
(:func:`processes.warm_socket.warm_socket`), hands it its arguments, working directory,
environment and standard streams, and relays signals to the forked child that runs it until
the child says its exit status: the command's output, exit status, Ctrl-C and ``kill -9``
behave as for a command run in place. Standard library only (and
:mod:`processes.warm_socket`): it decides in milliseconds whether a warm process can take
the command.
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

from processes.warm_socket import warm_socket

__all__ = ["run_warm", "wait_for_warm_process", "warm_socket"]

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


def run_warm(argv: Sequence[str]) -> int | None:
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
