"""The ``--store`` option, checked before a command reads or writes anything.

A store that cannot work is reported in one line naming the option and what is wrong: a path
that is a file (or lies inside one), a folder that cannot be written (for the commands that
write), ``memory://`` (it would vanish with the command, and the labels path with it), an
fsspec protocol whose package is not installed (naming the install extra) or not known, or
a URL that cannot be reached (its root is listed once, before anything else).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from cli.output import CommandError
from storage import DEFAULT_ROOT, STORE_ENV

__all__ = ["EXTRAS", "checked_store"]

#: The install extra (of pyproject.toml) and package of fsspec protocols that need one.
EXTRAS = {"s3": ("s3", "s3fs"), "s3a": ("s3", "s3fs")}


def checked_store(value: str | None, *, writes: bool,
                  reach: Callable[[Callable[[], None]], None] | None = None) -> str:
    """The store URL or path a command uses (``--store``, else ``$FASTMICE_STORE``, else
    ``./.fastmice``), checked; :class:`CommandError` if it cannot work.

    A URL's root is listed before this returns, unless ``reach`` is given: it is then
    handed the check of the root, to make when the command needs it (a stored answer
    found first shows the store was reached, a round trip sooner).
    """
    env = os.environ.get(STORE_ENV)
    where = "--store" if value is not None else (f"${STORE_ENV}" if env else "the store")
    url = value if value is not None else env or DEFAULT_ROOT
    if "\x00" in url:
        raise CommandError(f"{where} {url!r}: a path cannot contain a NUL character.")
    if "://" not in url:
        _check_folder(Path(url), where, writes)
        return url
    protocol = url.split("://", 1)[0].lower()
    if protocol == "memory":
        raise CommandError(f"{where} {url}: a memory:// store lives only as long as one "
                           f"command (its labels would vanish with it); give a folder or a "
                           f"persistent URL such as s3://bucket/path.")
    if protocol in ("file", "local"):
        _check_folder(Path(url.split("://", 1)[1]), where, writes)
        return url
    import fsspec

    try:
        fsspec.get_filesystem_class(protocol)
    except ImportError:
        extra, package = EXTRAS.get(protocol, (None, None))
        how = (f'pip install -e ".[{extra}]" (it installs {package})' if extra else
               f"install the fsspec package for {protocol}://")
        raise CommandError(f"{where} {url}: {protocol}:// stores need a package that is not "
                           f"installed: {how}.") from None
    except ValueError:
        raise CommandError(f"{where} {url}: unknown protocol {protocol!r} (expected a folder, "
                           f"file:// or an fsspec URL such as s3://bucket/path).") from None
    if reach is None:
        _reach(url, where)
    else:
        reach(lambda: _reach(url, where))
    return url


def _reach(url: str, where: str) -> None:
    """List the store's root once: an unreachable endpoint or refused credentials are said
    now, in one line, rather than by the first task that needs the store."""
    from storage import open_store

    try:
        open_store(url)._listdir("")
    except Exception as exc:  # s3fs, botocore and aiohttp raise many error types
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise CommandError(f"{where} {url} cannot be reached: {reason}") from None


def _check_folder(path: Path, where: str, writes: bool) -> None:
    """A store folder: not a file, not inside a file, writable if the command writes."""
    shown = os.fspath(path)
    if path.exists() and not path.is_dir():
        raise CommandError(f"{where} {shown} is a file, not a folder; give the folder of an "
                           f"artifact store (it is created if missing).")
    existing = path.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise CommandError(f"{where} {shown}: {existing} is a file, so no folder can be "
                           f"created below it.")
    if writes and not _writable(existing):
        raise CommandError(f"{where} {shown}: cannot write in {existing} (permission denied or "
                           f"read-only file system).")


def _writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (tried, then removed: root ignores the
    permission bits that ``os.access`` reads)."""
    probe = folder / f".tmp-{uuid.uuid4().hex[:12]}-write-probe"
    try:
        probe.touch(exist_ok=False)
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.unlink()
    return True
