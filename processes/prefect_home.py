"""Where Prefect keeps its database for fastmice, and why a server would not start there.

A Prefect home (``~/.prefect``) that another project migrated with a newer Prefect cannot be
opened by ours: the embedded API server dies at once with ``alembic ... Can't locate revision``
and Prefect's client would wait for its start-up timeout. So, unless the user chose a server
or a home of their own, fastmice keeps Prefect's database in a home of its own
(``$FASTMICE_PREFECT_HOME``, else ``~/.fastmice/prefect``), and checks a SQLite database's
migration revision before it starts a server on it.

Nothing here imports Prefect.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sqlite3
import tempfile
import tomllib
from collections.abc import MutableMapping
from pathlib import Path

__all__ = ["SETTING_OFF", "api_configured", "choose_prefect_home", "default_home",
           "foreign_database", "known_revisions", "prefect_version", "runtime_folder",
           "server_key", "shares_server", "user_chose_prefect"]

ROOT = Path(__file__).resolve().parents[1]

#: The values that turn a FASTMICE_* switch off.
SETTING_OFF = ("0", "", "false", "no")

#: Settings that say the user chose where Prefect's API or database is.
_USER_CHOICES = ("PREFECT_API_URL", "PREFECT_HOME", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH",
                 "PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL")


def default_home(environ: MutableMapping[str, str] = os.environ) -> Path:
    """fastmice's own Prefect home: ``$FASTMICE_PREFECT_HOME``, else ``~/.fastmice/prefect``."""
    chosen = environ.get("FASTMICE_PREFECT_HOME")
    return Path(chosen).expanduser() if chosen else Path.home() / ".fastmice" / "prefect"


def _active_profile(path: Path, environ: MutableMapping[str, str]) -> dict[str, object]:
    """The settings of the active profile in the profiles file ``path`` ({} if none)."""
    try:
        config = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    active = environ.get("PREFECT_PROFILE") or config.get("active", "ephemeral")
    settings = config.get("profiles", {}).get(active, {})
    return settings if isinstance(settings, dict) else {}


def api_configured(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Whether a Prefect server is set (``PREFECT_API_URL`` in the environment or in the
    active profile): then every run goes through a flow, so that it shows in that server."""
    if environ.get("PREFECT_API_URL"):
        return True
    files = [environ.get("PREFECT_PROFILES_PATH"),
             environ.get("PREFECT_HOME") and str(Path(environ["PREFECT_HOME"]) / "profiles.toml"),
             str(Path.home() / ".prefect" / "profiles.toml")]
    return any(_active_profile(Path(f).expanduser(), environ).get("PREFECT_API_URL")
               for f in files if f)


def user_chose_prefect(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Whether the environment or the active profile of ``~/.prefect/profiles.toml`` sets
    Prefect's API, home or database (then fastmice leaves Prefect's settings alone)."""
    if any(environ.get(name) for name in _USER_CHOICES):
        return True
    settings = _active_profile(Path.home() / ".prefect" / "profiles.toml", environ)
    return any(name in settings for name in _USER_CHOICES)


def choose_prefect_home(environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Point ``PREFECT_HOME`` at fastmice's own home unless the user chose Prefect's settings
    (call it before Prefect is imported); the home chosen, or None if left alone."""
    if any(environ.get(name) for name in _USER_CHOICES):
        return None  # an explicit PREFECT_* variable wins over FASTMICE_PREFECT_HOME
    if not environ.get("FASTMICE_PREFECT_HOME") and user_chose_prefect(environ):
        return None  # the active Prefect profile names a server, home or database
    home = default_home(environ)
    with contextlib.suppress(OSError):
        home.mkdir(parents=True, exist_ok=True)
    environ["PREFECT_HOME"] = str(home)
    return home


def shares_server(own_home: bool, environ: MutableMapping[str, str] = os.environ) -> bool:
    """Whether commands share one local API server: ``FASTMICE_SHARED_API`` (1 or 0), by
    default only in fastmice's own Prefect home (``own_home``)."""
    setting = environ.get("FASTMICE_SHARED_API")
    return own_home if setting is None else setting not in SETTING_OFF


def known_revisions() -> set[str]:
    """The SQLite migration revisions this installation of Prefect knows (empty if unknown)."""
    spec = importlib.util.find_spec("prefect")
    if spec is None or not spec.submodule_search_locations:
        return set()
    root = Path(next(iter(spec.submodule_search_locations)))
    versions = root / "server" / "database" / "_migrations" / "versions" / "sqlite"
    revisions = set()
    pattern = re.compile(r"^revision\s*=\s*['\"]([0-9a-f]+)['\"]", re.M)
    for path in versions.glob("*.py"):
        with contextlib.suppress(OSError):
            revisions.update(pattern.findall(path.read_text()))
    return revisions


def foreign_database(db_path: str | os.PathLike[str]) -> str | None:
    """The migration revision of the SQLite database ``db_path`` if this Prefect does not know
    it (a newer Prefect migrated it), else None (also for a missing or unreadable file)."""
    path = Path(db_path)
    if not path.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True,
                                                timeout=5)) as db:
            rows = db.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:
        return None  # not migrated yet, or not ours to judge: the server says why
    known = known_revisions()
    unknown = [row[0] for row in rows if row[0] not in known]
    return unknown[0] if known and unknown else None


def prefect_version() -> str:
    """The installed Prefect's version, read from its files without importing it ("none")."""
    spec = importlib.util.find_spec("prefect")
    if spec is None or not spec.submodule_search_locations:
        return "none"
    build = Path(next(iter(spec.submodule_search_locations))) / "_build_info.py"
    with contextlib.suppress(OSError):
        found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", build.read_text(), re.M)
        if found:
            return found[1]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("prefect")
    except PackageNotFoundError:
        return "none"


def package_folder(name: str) -> Path:
    """Where the top-level package ``name`` lives (found, not imported): beside ``cli/`` in a
    checkout; ``fastmice`` sits outside the application's folder in an installed wheel."""
    with contextlib.suppress(ImportError, ValueError):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            return Path(spec.origin).parent
    return ROOT / name


def server_key() -> str:
    """What makes a shared API server and a warm process interchangeable between commands:
    the Prefect version and fastmice's ``CODE_VERSION`` (read from its file, without
    importing it), e.g. ``prefect-3.9.1-code13``. A command never joins one of another
    key."""
    code = "unknown"
    with contextlib.suppress(OSError):
        found = re.search(r"^CODE_VERSION\s*=\s*['\"]([^'\"]+)",
                          (package_folder("fastmice") / "__init__.py").read_text(), re.M)
        code = found[1] if found else code
    return f"prefect-{prefect_version()}-code{code}"


def runtime_folder() -> Path:
    """This user's folder of the processes fastmice leaves running (warm processes' sockets,
    and an entry per shared server and warm process for ``fastmice daemon``):
    ``$TMPDIR/fastmice-warm-<uid>``, which only its user may enter."""
    return Path(tempfile.gettempdir()) / f"fastmice-warm-{os.getuid()}"
