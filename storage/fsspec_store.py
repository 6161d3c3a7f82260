"""``FsspecStore``: the artifact store on any fsspec URL (``memory://``, ``file://``, ``s3://``...)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import posixpath
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from storage import _codecs
from storage._s3 import s3_options
from storage.atomic import temporary_name
from storage.base import META_FILE, BaseStore
from storage.locks import LOCKS_DIR, LeaseLock

__all__ = ["FsspecStore"]

_CHUNK = 8 * 2**20
_SPOOL_BYTES = 64 * 2**20
#: A file up to this size is checksummed from one read into memory on an object store.
_SMALL_BYTES = 8 * 2**20


def _digest_stream(f: IO[bytes]) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    while chunk := f.read(_CHUNK):
        h.update(chunk)
        size += len(chunk)
    return size, h.hexdigest()


class FsspecStore(BaseStore):
    """Artifact store on an fsspec filesystem (fsspec is imported when one is opened).

    Parameters
    ----------
    url : str
        Root of the store, such as ``"memory://fastmice"``, ``"file:///data/store"`` or
        ``"s3://bucket/fastmice"``.
    **storage_options
        Passed to ``fsspec.core.url_to_fs`` (credentials, endpoint...).

    Notes
    -----
    Object stores have no atomic folder rename, so an artifact is published file by file: the
    data file is uploaded under a hidden temporary name in the artifact's folder, moved to
    its final name, then ``meta.json`` (the commit marker) is written the same way. Without
    ``meta.json`` an artifact does not exist. Two processes writing the same key at once may
    leave a data file and a ``meta.json`` from different writes; the checksum then fails, the
    artifact is quarantined and recomputed: a wasted computation, never a wrong result.
    Record versions are created with a check-then-move and a read-back of the written bytes,
    which detects, but cannot always prevent, a concurrent writer of the same version; use a
    :class:`~storage.local.LocalStore` where strict compare-and-swap matters.
    On a local filesystem (``file://``) :meth:`local_path` returns real paths, so
    ``get(ref, mmap=True)`` memory-maps ``.npy`` artifacts.
    """

    def __init__(self, url: str, **storage_options: Any) -> None:
        import fsspec

        if fsspec.core.split_protocol(url)[0] in ("s3", "s3a"):
            storage_options = s3_options(storage_options)
        self.fs, root = fsspec.core.url_to_fs(url, **storage_options)
        self.root = root.rstrip("/") or "/"
        self.url = url
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self._is_local = "file" in protocols or "local" in protocols
        self._round_trips = not self._is_local

    def __repr__(self) -> str:
        return f"FsspecStore({self.url!r})"

    def _path(self, rel: str) -> str:
        return posixpath.join(self.root, rel) if rel else self.root

    def _tmp(self, rel: str) -> str:
        head, name = posixpath.split(self._path(rel))
        return posixpath.join(head, temporary_name(name))

    def _upload(self, rel: str, source: IO[bytes]) -> None:
        """Write `source` to a temporary name beside `rel`, then move it to `rel`."""
        path = self._path(rel)
        tmp = self._tmp(rel)
        self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        try:
            with self.fs.open(tmp, "wb") as out:
                shutil.copyfileobj(source, out, _CHUNK)
            self.fs.mv(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                if self.fs.exists(tmp):
                    self.fs.rm(tmp)

    # ------------------------------------------------------------------ primitives

    def _publish(
        self, rel_dir: str, filename: str, write: Callable[[IO[bytes]], None], meta: dict[str, Any]
    ) -> None:
        with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
            write(spool)
            spool.seek(0)
            meta["size"], meta["sha256"] = _digest_stream(spool)
            spool.seek(0)
            self._upload(f"{rel_dir}/{filename}", spool)
        self._upload(f"{rel_dir}/{META_FILE}", io.BytesIO(_codecs.to_json_bytes(meta)))

    def _read_bytes(self, rel: str) -> bytes:
        path = self._path(rel)
        if self._is_local:
            return self.fs.cat_file(path)
        # From byte 0: one request (a whole-file read asks for the size first, to split a
        # large file into parallel ranges). An empty file has no byte 0: read it whole.
        try:
            return self.fs.cat_file(path, start=0)
        except FileNotFoundError:
            raise
        except OSError:
            return self.fs.cat_file(path)

    def _file_digest(self, rel: str, expected_size: int | None = None) -> tuple[int, str]:
        if not self._is_local and expected_size is not None and expected_size <= _SMALL_BYTES:
            data = self._read_bytes(rel)  # a small file: one request, not a size, then a read
            return len(data), hashlib.sha256(data).hexdigest()
        with self.fs.open(self._path(rel), "rb") as f:
            return _digest_stream(f)

    def _verified_source(self, rel: str) -> tuple[Path | IO[bytes], int, str]:
        if self._is_local:
            size, sha = self._file_digest(rel)
            return Path(self._path(rel)), size, sha
        data = self.fs.cat_file(self._path(rel))  # one read, then decoded from memory
        return io.BytesIO(data), len(data), hashlib.sha256(data).hexdigest()

    def _listdir(self, rel: str) -> list[str]:
        path = self._path(rel)
        self.fs.invalidate_cache(path)
        try:
            entries = self.fs.ls(path, detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [posixpath.basename(str(e).rstrip("/")) for e in entries]

    def _file_sizes(self, rel: str) -> dict[str, int]:
        path = self._path(rel)
        self.fs.invalidate_cache(path)
        try:
            found = self.fs.find(path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return {posixpath.relpath(str(name), path): int(info.get("size") or 0)
                for name, info in found.items() if info.get("type", "file") == "file"}

    def _isfile(self, rel: str) -> bool:
        return self.fs.isfile(self._path(rel))

    def _move_dir(self, src: str, dst: str) -> bool:
        src_path, dst_path = self._path(src), self._path(dst)
        try:
            files = self.fs.find(src_path)
        except FileNotFoundError:
            return False
        if not files:
            return False
        for f in files:
            rel = posixpath.relpath(str(f), src_path)
            target = posixpath.join(dst_path, rel)
            self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
            self.fs.mv(f, target)
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(src_path, recursive=True)
        return True

    def _move_file(self, src: str, dst: str) -> bool:
        target = self._path(dst)
        self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
        try:
            self.fs.mv(self._path(src), target)
        except FileNotFoundError:
            return False
        return True

    def _modified(self, rel: str) -> float | None:
        try:
            info = self.fs.info(self._path(rel))
        except FileNotFoundError:
            return None
        for name in ("mtime", "LastModified", "last_modified", "created"):
            value = info.get(name)
            if isinstance(value, int | float):
                return float(value)
            if hasattr(value, "timestamp"):
                return value.timestamp()
        return None

    def _remove_dir(self, rel: str) -> bool:
        path = self._path(rel)
        if not self.fs.exists(path):
            return False
        self.fs.rm(path, recursive=True)
        return True

    def _write_bytes(self, rel: str, data: bytes) -> None:
        self._upload(rel, io.BytesIO(data))

    def _create_exclusive(self, rel: str, data: bytes) -> bool:
        if self.fs.exists(self._path(rel)):
            return False
        self._upload(rel, io.BytesIO(data))
        # Read back: if a concurrent writer's move landed after ours, we lost the race.
        return self._read_bytes(rel) == data

    def _lock(self, name: str, timeout: float | None) -> contextlib.AbstractContextManager:
        rel = f"{LOCKS_DIR}/{name}.json"

        def remove() -> None:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(self._path(rel))

        return LeaseLock(lambda data: self._create_exclusive(rel, data),
                         lambda: self._read_bytes(rel), remove).hold(timeout)

    def _display(self, rel: str) -> str:
        return self.fs.unstrip_protocol(self._path(rel))

    def _local(self, rel: str) -> Path | None:
        return Path(self._path(rel)) if self._is_local else None
