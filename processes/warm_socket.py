"""Where the warm process for a command's environment listens (:func:`warm_socket`).

Shared by the launcher (:mod:`processes.warm_client`), which connects there, and the warm process
(:mod:`processes.warm`), which listens there. Standard library only, as the launcher.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path

from processes.prefect_home import (
    SETTING_OFF,
    choose_prefect_home,
    package_folder,
    runtime_folder,
    server_key,
    shares_server,
)

__all__ = ["warm_socket"]

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cli", "fastmice", "flows", "pipeline", "processes", "storage", "tasks")
#: Environment variables a warm process reads once, at import: a command whose values differ
#: goes to another warm process (or runs in place).
_KEYED_PREFIXES = ("PREFECT_", "FASTMICE_", "OMP_", "OPENBLAS_", "MKL_", "BLIS_", "NUMEXPR_",
                   "DASK_", "MPL", "LC_", "LANG", "PYTHON", "HOME", "TMP", "PATH", "AWS_")
#: ... except those the command reads when it runs.
_PER_COMMAND = ("FASTMICE_STORE", "FASTMICE_DEBUG", "FASTMICE_WARM", "FASTMICE_FAULT")


def _code_fingerprint() -> list[object]:
    """What makes a warm process stale: our sources' and the installed packages' times."""
    stamps: list[object] = [os.path.abspath(sys.executable), str(ROOT), sys.version]
    for package in PACKAGES:
        folder = package_folder(package)
        for path in sorted(folder.rglob("*.py")):
            with contextlib.suppress(OSError):
                stat = path.stat()
                stamps.append((str(path.relative_to(folder)), stat.st_mtime_ns, stat.st_size))
    for folder in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        with contextlib.suppress(OSError):
            stamps.append(os.stat(folder).st_mtime_ns)
    with contextlib.suppress(OSError):
        stamps.append((Path.home() / ".prefect" / "profiles.toml").stat().st_mtime_ns)
    return stamps


def warm_socket(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The socket of the warm process that may run a command in ``environ``; None when no
    warm process may (``FASTMICE_WARM=0``, or no shared API server)."""
    if environ.get("FASTMICE_WARM", "1") in SETTING_OFF or not shares_server(
            choose_prefect_home(dict(environ)) is not None, environ):
        return None
    keyed = sorted((name, value) for name, value in environ.items()
                   if name.startswith(_KEYED_PREFIXES) and name not in _PER_COMMAND)
    key = hashlib.sha256(repr([keyed, _code_fingerprint()]).encode()).hexdigest()[:16]
    return runtime_folder() / f"{server_key()}-{key}.sock"
