"""The errors a command's application function raises for a user to read, each one line."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ParameterError", "RequestError", "checked_out_file"]


class ParameterError(ValueError):
    """A parameter that is wrong, named as :class:`fastmice.EnsembleParams` names it (the
    command line words it with its options)."""


class RequestError(Exception):
    """A request that cannot be served, said in one line (a bad output path, an unknown
    dataset, data that another dataset of that name holds, labels that are lost)."""


def checked_out_file(out: Path, suffixes: tuple[str, ...], expected: str,
                     shown: str | None = None) -> Path:
    """``out``, a file a command is to write, checked before anything is computed: one of
    ``suffixes`` (else "expected ``expected``"), not a folder, in a folder that exists;
    ``shown`` is how the messages name it (default: ``out``)."""
    shown = str(out) if shown is None else shown
    if out.suffix.lower() not in suffixes:
        raise RequestError(f"--out {shown}: expected {expected}.")
    if out.is_dir():
        raise RequestError(f"--out {shown} is a directory; give a file name.")
    if not out.absolute().parent.is_dir():
        raise RequestError(f"--out {shown}: folder {out.absolute().parent} does not exist.")
    return out
