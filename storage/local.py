"""``LocalStore``: the artifact store on a local directory (the default backend)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from storage import _codecs
from storage._filememo import FileMemo
from storage.atomic import temporary_name, write_file_atomic
from storage.base import META_FILE, BaseStore
from storage.errors import StoreEscapeError
from storage.locks import LOCKS_DIR, flock_file

__all__ = ["LocalStore"]


#: sha256 of the files this process has already hashed (see storage._filememo).
_digests = FileMemo()


def _digest_path(path: Path) -> tuple[int, str]:
    """Size and sha256 of a file, hashed once per process while the file is unchanged."""
    with open(path, "rb") as f:
        sha = _digests(f.fileno(), str(path),
                       lambda: hashlib.file_digest(f, "sha256").hexdigest())
        return os.fstat(f.fileno()).st_size, sha


def _write_synced(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    with open(path, "xb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())


class _HashingWriter:
    """A file opened for writing that hashes what goes through ``write`` (sequential writers
    only: ``np.save``, not a zip file that seeks back)."""

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.sha.update(view)
        self.size += len(view)
        return self._f.write(view)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def _write_data(path: Path, write: Callable[[IO[bytes]], None],
                sequential: bool) -> tuple[int, str]:
    """Write an artifact's data file; return its size and sha256.

    Not fsynced: the data of a large artifact (a view, a graph) would otherwise wait for
    the disk, and a file torn by a crash fails its checksum on read and is quarantined and
    recomputed (or restored from the user's data). Its ``meta.json`` is fsynced. A
    sequentially written file is hashed on the way out instead of read again.
    """
    with open(path, "xb") as f:
        if not sequential:
            write(f)
        else:
            hashing = _HashingWriter(f)
            write(hashing)
            return hashing.size, hashing.sha.hexdigest()
    return _digest_path(path)


class LocalStore(BaseStore):
    """Artifact store in a local directory.

    Parameters
    ----------
    root : str or os.PathLike
        The store's directory; made absolute now (a later ``chdir`` does not move the store)
        and created, with a ``.gitignore`` holding ``*``, on the first write. An existing
        non-empty directory gets no ``.gitignore``.

    Notes
    -----
    An artifact is written into a hidden temporary folder beside its final place
    (``<kind>/<key[:2]>/.tmp-<key>-<id>/``, its files already carrying their final names, so
    the ``.npz`` suffix is right), its ``meta.json`` fsynced (the data file is not: a torn one
    fails its checksum), then published with one ``os.replace`` of the
    folder: readers see the data file and its ``meta.json`` together or not at all, and two
    processes writing the same key never mix their files (the second ``os.replace`` fails on
    the non-empty folder and the second writer keeps the first one's artifact). Record
    versions are created with ``os.link`` of a synced temporary file, which fails if the
    version exists: that is the compare-and-swap.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from storage import LocalStore, content_key
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = LocalStore(tmp.name)
    >>> x = np.arange(3)
    >>> ref = store.put("labels", content_key(x), x)
    >>> store.get(ref)
    array([0, 1, 2])
    >>> tmp.cleanup()
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        # Normalised, so that the paths it prints (labels, quarantine) have no "..".
        self.root = Path(os.path.abspath(Path(root).expanduser()))
        self.url = str(self.root)
        self._root_ready = False

    def __repr__(self) -> str:
        return f"LocalStore({self.url!r})"

    # ------------------------------------------------------------------ helpers

    def _path(self, rel: str, *, follow: bool = True) -> Path:
        """The path of ``rel``, refused if it leads out of the store through a symbolic link
        (``follow=False``: the last component may be a link, handled as itself)."""
        path = self.root.joinpath(*rel.split("/")) if rel else self.root
        if rel:
            real_root = os.path.realpath(self.root)
            real = os.path.realpath(path if follow else path.parent)
            if real != real_root and not real.startswith(real_root + os.sep):
                raise StoreEscapeError(
                    f"{path} leads out of store {self.url} through a symbolic link (to "
                    f"{real}); it is not followed. Remove the link, or `fastmice fsck "
                    f"--repair` to set it aside.", path=str(path))
        return path

    def _ensure_root(self) -> None:
        if self._root_ready:
            return
        new = not self.root.exists()
        self.root.mkdir(parents=True, exist_ok=True)
        if new or not any(self.root.iterdir()):
            self._write_bytes(".gitignore", b"# Created by fastmice: a local artifact store.\n*\n")
        self._root_ready = True

    # ------------------------------------------------------------------ primitives

    def _publish(
        self, rel_dir: str, filename: str, write: Callable[[IO[bytes]], None], meta: dict[str, Any]
    ) -> None:
        self._ensure_root()
        final = self._path(rel_dir)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / temporary_name(final.name)
        tmp.mkdir()
        try:
            meta["size"], meta["sha256"] = _write_data(tmp / filename, write,
                                                       meta["format"] == "npy")
            body = _codecs.to_json_bytes(meta)
            _write_synced(tmp / META_FILE, lambda f: f.write(body))
            try:
                os.replace(tmp, final)
                _digests.remember(str(final / filename), meta["sha256"])
            except OSError:
                if (final / META_FILE).is_file():
                    return  # another writer published this key first: keep theirs
                if not final.exists():
                    raise
                # A folder without meta.json (left by hand or by an old crash): set it aside.
                self._quarantine(
                    meta["kind"], meta["key"], "incomplete artifact folder", str(final)
                )
                os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def _read_bytes(self, rel: str) -> bytes:
        return self._path(rel).read_bytes()

    def _file_digest(self, rel: str, expected_size: int | None = None) -> tuple[int, str]:
        return _digest_path(self._path(rel))

    def _verified_source(self, rel: str) -> tuple[Path, int, str]:
        path = self._path(rel)
        size, sha = _digest_path(path)
        return path, size, sha

    def _listdir(self, rel: str) -> list[str]:
        try:
            return [e.name for e in os.scandir(self._path(rel))]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _file_sizes(self, rel: str) -> dict[str, int]:
        base = self._path(rel)
        sizes = {}
        for folder, _, names in os.walk(base):
            for name in names:
                path = os.path.join(folder, name)
                with contextlib.suppress(FileNotFoundError):
                    sizes[os.path.relpath(path, base).replace(os.sep, "/")] = \
                        os.lstat(path).st_size
        return sizes

    def _isfile(self, rel: str) -> bool:
        return self._path(rel).is_file()

    def _move_dir(self, src: str, dst: str) -> bool:
        target = self._path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(self._path(src, follow=False), target)
        except FileNotFoundError:
            return False
        return True

    def _move_file(self, src: str, dst: str) -> bool:
        return self._move_dir(src, dst)  # os.rename moves a file as it moves a folder

    def _modified(self, rel: str) -> float | None:
        try:
            return self._path(rel).stat().st_mtime
        except FileNotFoundError:
            return None

    def _remove_dir(self, rel: str) -> bool:
        path = self._path(rel, follow=False)
        # Rename first so that no reader ever sees a half-deleted artifact.
        doomed = path.parent / temporary_name(f"deleted-{path.name}")
        try:
            os.rename(path, doomed)
        except FileNotFoundError:
            return False
        if doomed.is_dir() and not doomed.is_symlink():
            shutil.rmtree(doomed)
        else:
            doomed.unlink()
        return True

    def _write_bytes(self, rel: str, data: bytes) -> None:
        path = self._path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(path, lambda f: f.write(data))

    def _create_exclusive(self, rel: str, data: bytes) -> bool:
        self._ensure_root()
        path = self._path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / temporary_name(path.name)
        try:
            _write_synced(tmp, lambda f: f.write(data))
            try:
                os.link(tmp, path)  # atomic, and fails if `path` exists
            except FileExistsError:
                return False
            except OSError:  # a filesystem without hard links: exclusive create, then fill
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    return False
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def _lock(self, name: str, timeout: float | None) -> contextlib.AbstractContextManager:
        self._ensure_root()
        return flock_file(self._path(f"{LOCKS_DIR}/{name}.lock"), timeout)

    def _display(self, rel: str) -> str:
        return str(self.root.joinpath(*rel.split("/")) if rel else self.root)

    def _local(self, rel: str) -> Path:
        return self._path(rel)
