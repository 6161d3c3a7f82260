"""The one error the process machinery raises for a user to read."""

from __future__ import annotations

__all__ = ["ProcessError"]


class ProcessError(Exception):
    """A server, a warm process or a Dask scheduler that cannot serve the command, said in
    one line (the command line prints it without a traceback)."""
