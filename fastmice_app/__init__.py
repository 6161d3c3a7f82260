"""The ``fastmice`` command, installed or checked out: put the application on the path, run it.

In a checkout the application's packages (``cli``, ``processes``, ``flows``, ``tasks``,
``pipeline``, ``storage``) sit at the repository root beside ``fastmice/``. The wheel
installs them inside this package instead, so that their short names never sit in
site-packages beside other distributions' packages; :func:`activate` puts the folder that
holds them first on ``sys.path``, and on ``PYTHONPATH`` for the processes the command starts
(the warm process, the shared API server, Dask workers, served flows). This module imports
only the standard library.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["activate", "application_root", "main"]


def application_root() -> Path:
    """The folder that holds ``cli/``: this package's own in a wheel, else the checkout."""
    here = Path(__file__).resolve().parent
    return here if (here / "cli").is_dir() else here.parent


def activate() -> Path:
    """Make ``cli``, ``processes``, ``flows``, ``tasks``, ``pipeline`` and ``storage``
    importable here and in child processes; returns the folder that holds them."""
    root = application_root()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(root) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(root), *paths])
    return root


def main() -> int:
    """The ``fastmice`` console script; returns the exit status."""
    activate()
    from cli.launch import main as run_command

    return run_command()
