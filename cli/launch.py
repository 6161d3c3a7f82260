"""The ``fastmice`` console script: run the command in a warm process when one is ready.

A command that runs a flow pays for importing numpy, scipy, scikit-learn, Prefect and
matplotlib (about 3 s on a quiet 2-core machine, 5-10 s on a busy one) before it does any
work. When commands share fastmice's local API server (:mod:`processes.shared_api`), the
first such command also starts a *warm process* (:mod:`processes.warm`) that has imported all
of it and lives as long as the server does; later commands hand it their arguments and
streams (:mod:`processes.warm_client`) and it runs each in a forked child with everything
already imported.

This module imports only the standard library (and :mod:`processes.warm_client`, which
imports nothing else of ours but :mod:`processes.warm_socket` and
:mod:`processes.prefect_home`): it decides in milliseconds whether a warm process can take
the command, and otherwise runs it here (:func:`cli.main.main`). ``FASTMICE_WARM=0`` turns
it off.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from processes.warm_client import run_warm, wait_for_warm_process, warm_socket

__all__ = ["COMMAND_ENTRY", "main", "wait_for_warm_process", "warm_socket"]

#: The function a warm process runs each command with (its module imported in advance).
COMMAND_ENTRY = "cli.main:main"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fastmice`` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["daemon"] and not any(arg in ("-h", "--help") for arg in argv):
        from cli.commands.daemon import main as daemon  # none of the command line's imports

        return daemon(argv[1:])
    status = run_warm(argv)
    if status is not None:
        return status
    environ = dict(os.environ)  # before the command sets Prefect's variables
    from cli.main import main as run_here

    status = run_here(argv)
    from processes.engine import joined_shared_server

    if joined_shared_server():
        from cli.commands.daemon import say_left_running
        from processes.shared_api import idle_seconds, started
        from processes.warm import spawn

        server = started["server"]["pid"] if started else None
        say_left_running(server, spawn(environ, COMMAND_ENTRY), idle_seconds())
    return status


if __name__ == "__main__":
    sys.exit(main())
