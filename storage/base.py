"""The artifact-store interface and the logic every backend shares.

A backend (:class:`~storage.local.LocalStore`, :class:`~storage.fsspec_store.FsspecStore`)
only provides a handful of file primitives on paths relative to its root; validation, meta
files, checksums, quarantine and versioned records are implemented once, here.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import logging
import re
import uuid
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn, Protocol, runtime_checkable

from storage import _codecs
from storage._names import validate_kind, validate_name
from storage._version import FORMAT_VERSION, __version__
from storage.errors import ArtifactIntegrityError, ArtifactNotFoundError, RecordConflictError

__all__ = ["ArtifactRef", "ArtifactStore", "BaseStore"]

META_FILE = "meta.json"
QUARANTINE = "quarantine"
RECORDS = "records"
RECORD_FORMAT = "fastmice-record"
_RECORD_RE = re.compile(r"v(\d{6,})\.json")
_DECODE_ERRORS = (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile)

logger = logging.getLogger("storage")


def utc_now() -> str:
    """The current UTC time as ISO 8601 with microseconds."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


@functools.cache
def _fastmice_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastmice")
    except PackageNotFoundError:
        return None


@dataclass(frozen=True)
class ArtifactRef:
    """A small, JSON-able pointer to a stored artifact.

    Tasks return ``ref.to_dict()`` (never the array itself) and downstream tasks call
    ``store.get(ref)``; ``store.get`` also accepts the dict.

    Parameters
    ----------
    kind : str
        Artifact kind, a lower-case noun such as ``"anchor-graph"``.
    key : str
        The content address, usually ``content_key(...)``.
    format : {"npy", "npz", "sparse-npz", "json", "parquet"}
        How the artifact is encoded (decided by ``put`` from the object's type).
    """

    kind: str
    key: str
    format: str

    def __post_init__(self) -> None:
        validate_kind(self.kind)
        validate_name(self.key, "key")
        if self.format not in _codecs.FILE_NAMES:
            raise ValueError(
                f"Unknown artifact format {self.format!r}; expected one of "
                f"{sorted(_codecs.FILE_NAMES)}."
            )

    def to_dict(self) -> dict[str, str]:
        """Return ``{"kind": ..., "key": ..., "format": ...}``."""
        return {"kind": self.kind, "key": self.key, "format": self.format}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ArtifactRef:
        """Rebuild a ref from :meth:`to_dict` output (extra entries are ignored).

        Raises
        ------
        TypeError
            If `d` is not a mapping.
        ValueError
            If an entry is missing or invalid.
        """
        if not isinstance(d, Mapping):
            raise TypeError(f"An artifact ref must be a mapping; got {type(d).__name__}.")
        missing = [k for k in ("kind", "key", "format") if k not in d]
        if missing:
            raise ValueError(f"Artifact ref {dict(d)!r} lacks {missing}.")
        return cls(d["kind"], d["key"], d["format"])


RefLike = ArtifactRef | Mapping[str, Any]


def as_ref(ref: RefLike) -> ArtifactRef:
    """Accept an :class:`ArtifactRef` or its dict form."""
    return ref if isinstance(ref, ArtifactRef) else ArtifactRef.from_dict(ref)


@runtime_checkable
class ArtifactStore(Protocol):
    """What the pipeline needs from a store (implemented by :class:`BaseStore`)."""

    url: str

    def put(
        self, kind: str, key: str, obj: Any, *, metadata: Mapping[str, Any] | None = None
    ) -> ArtifactRef: ...

    def get(self, ref: RefLike, *, mmap: bool = False) -> Any: ...

    def exists(self, kind: str, key: str) -> bool: ...

    def list(self, kind: str) -> list[str]: ...

    def delete(self, ref: RefLike, *, missing_ok: bool = False) -> None: ...

    def local_path(self, ref: RefLike) -> Path | None: ...

    def write_record(
        self, kind: str, name: str, data: Mapping[str, Any], *, expected_version: int | None = None
    ) -> int: ...

    def read_record(
        self, kind: str, name: str, *, version: int | None = None
    ) -> dict[str, Any]: ...

    def list_records(self, kind: str) -> list[str]: ...


class BaseStore(ABC):
    """Artifact store logic on top of a few file primitives (see the module docstring).

    Artifacts live at ``<root>/<kind>/<key[:2]>/<key>/data.<ext>`` with ``meta.json`` beside;
    named records at ``<root>/records/<kind>/<name>/v000001.json, v000002.json, ...``;
    corrupt artifacts are moved to ``<root>/quarantine/<kind>/<key>.<time>.<id>/``.
    """

    url: str

    # ------------------------------------------------------------------ backend primitives
    # `rel` is always a "/"-separated path relative to the root, built from validated names.

    @abstractmethod
    def _publish(
        self, rel_dir: str, filename: str, write: Callable[[IO[bytes]], None], meta: dict[str, Any]
    ) -> None:
        """Write the data file with `write`, add its ``size`` and ``sha256`` to `meta`, write
        ``meta.json``, and make the artifact visible (meta.json last / all at once)."""

    @abstractmethod
    def _read_bytes(self, rel: str) -> bytes:
        """Whole content of a file; ``FileNotFoundError`` if absent."""

    @abstractmethod
    def _file_digest(self, rel: str) -> tuple[int, str]:
        """``(size, sha256 hex)`` of a file, streamed; ``FileNotFoundError`` if absent."""

    @abstractmethod
    def _verified_source(self, rel: str) -> tuple[Path | IO[bytes], int, str]:
        """What :func:`~storage._codecs.decode` reads, with the size and sha256 it has."""

    @abstractmethod
    def _listdir(self, rel: str) -> list[str]:
        """Names in a folder (empty if it does not exist)."""

    @abstractmethod
    def _isfile(self, rel: str) -> bool:
        """Whether a file exists."""

    @abstractmethod
    def _move_dir(self, src: str, dst: str) -> bool:
        """Move a folder to a new place; ``False`` if `src` no longer exists."""

    @abstractmethod
    def _remove_dir(self, rel: str) -> bool:
        """Delete a folder and its content; ``False`` if it did not exist."""

    @abstractmethod
    def _write_bytes(self, rel: str, data: bytes) -> None:
        """Write a small file atomically (temporary name, then move), replacing any."""

    @abstractmethod
    def _create_exclusive(self, rel: str, data: bytes) -> bool:
        """Create a file with `data` only if it does not exist; ``False`` if it did."""

    @abstractmethod
    def _display(self, rel: str) -> str:
        """A path or URL naming `rel`, for messages."""

    @abstractmethod
    def _local(self, rel: str) -> Path | None:
        """The local filesystem path of `rel`, or ``None`` for non-local stores."""

    # ------------------------------------------------------------------ artifacts

    @staticmethod
    def _artifact_dir(kind: str, key: str) -> str:
        return f"{kind}/{key[:2]}/{key}"

    def put(
        self, kind: str, key: str, obj: Any, *, metadata: Mapping[str, Any] | None = None
    ) -> ArtifactRef:
        """Store `obj` under ``(kind, key)`` atomically, or do nothing if it is already there.

        Parameters
        ----------
        kind : str
            Artifact kind, a lower-case noun such as ``"anchor-graph"``.
        key : str
            Content address of the artifact, normally ``content_key(inputs, params,
            code_version)``; it must match ``[A-Za-z0-9][A-Za-z0-9._-]{0,127}``.
        obj : ndarray, sparse matrix, dict of ndarrays, JSON-able dict or list, or pyarrow.Table
            Stored as ``.npy``, ``.npz`` (scipy, uncompressed), ``.npz`` of arrays, ``.json``
            or ``.parquet``; a dict holding at least one ndarray is a dict of arrays.
        metadata : dict, optional
            Small JSON-able facts kept in the artifact's ``meta.json`` (parameters, code
            version...). Not part of the key.

        Returns
        -------
        ref : ArtifactRef

        Raises
        ------
        TypeError
            If `obj` has no storage format or holds Python objects (object dtype).
        ValueError
            If `kind` or `key` is invalid, or a valid artifact of another format already has
            this key.
        """
        validate_kind(kind)
        validate_name(key, "key")
        fmt = _codecs.format_of(obj)
        prepared = _codecs.prepare(fmt, obj)
        extra = _codecs.to_jsonable(dict(metadata or {}), "metadata")
        try:
            existing, _ = self._check(kind, key)
        except (ArtifactNotFoundError, ArtifactIntegrityError):
            pass
        else:
            if existing["format"] != fmt:
                raise ValueError(
                    f"Artifact {kind}/{key} already exists in store {self.url} as "
                    f"{existing['format']!r}; cannot put a {fmt!r} object under the same key "
                    f"(keys address content: derive the key from what the object depends on)."
                )
            return ArtifactRef(kind, key, fmt)
        meta = {
            "kind": kind,
            "key": key,
            "format": fmt,
            "file": _codecs.FILE_NAMES[fmt],
            "created": utc_now(),
            "storage_version": __version__,
            "storage_format": FORMAT_VERSION,
            "fastmice_version": _fastmice_version(),
            "metadata": extra,
        }
        self._publish(
            self._artifact_dir(kind, key),
            _codecs.FILE_NAMES[fmt],
            lambda f: _codecs.encode(fmt, prepared, f),
            meta,
        )
        return ArtifactRef(kind, key, fmt)

    def get(self, ref: RefLike, *, mmap: bool = False) -> Any:
        """Load an artifact after verifying its size and sha256.

        Parameters
        ----------
        ref : ArtifactRef or dict
            What :meth:`put` returned (or its ``to_dict()``).
        mmap : bool, default=False
            Return an ``npy`` artifact of a local store as a read-only ``np.memmap`` instead of
            reading it into memory. Ignored for other formats and non-local stores.

        Returns
        -------
        obj : ndarray, scipy.sparse matrix, dict of ndarrays, dict or list, or pyarrow.Table

        Raises
        ------
        ArtifactNotFoundError
            If the artifact is not in the store.
        ArtifactIntegrityError
            If it is truncated, corrupt or undecodable; it has then been moved to
            ``<root>/quarantine/`` so that it can be recomputed.
        ValueError
            If the stored format differs from ``ref.format``.
        """
        ref = as_ref(ref)
        meta, source = self._check(ref.kind, ref.key, load=True)
        if meta["format"] != ref.format:
            raise ValueError(
                f"Artifact {ref.kind}/{ref.key} in store {self.url} is stored as "
                f"{meta['format']!r}, but the ref says {ref.format!r}."
            )
        try:
            return _codecs.decode(ref.format, source, mmap=mmap)
        except _DECODE_ERRORS as e:
            rel = f"{self._artifact_dir(ref.kind, ref.key)}/{meta['file']}"
            self._integrity(
                ref.kind,
                ref.key,
                f"cannot be decoded as {ref.format} ({type(e).__name__}: {e})",
                rel,
            )

    def exists(self, kind: str, key: str) -> bool:
        """Whether a valid artifact is stored under ``(kind, key)``.

        The data file is checksummed. A corrupt or truncated artifact counts as absent: it is
        moved into ``<root>/quarantine/`` (not deleted, not used) so the caller recomputes it.
        """
        validate_kind(kind)
        validate_name(key, "key")
        try:
            self._check(kind, key)
        except (ArtifactNotFoundError, ArtifactIntegrityError):
            return False
        return True

    def ref(self, kind: str, key: str) -> ArtifactRef:
        """The ref of a stored artifact (its format read from ``meta.json``, not verified).

        Raises
        ------
        ArtifactNotFoundError
            If there is no such artifact.
        """
        validate_kind(kind)
        validate_name(key, "key")
        return ArtifactRef(kind, key, self._read_meta(kind, key)["format"])

    def read_meta(self, ref: RefLike) -> dict[str, Any]:
        """The ``meta.json`` of an artifact (format, size, sha256, created, metadata...).

        Raises
        ------
        ArtifactNotFoundError
            If there is no such artifact.
        """
        ref = as_ref(ref)
        return self._read_meta(ref.kind, ref.key)

    def list(self, kind: str) -> list[str]:
        """Sorted keys of the artifacts of `kind` that have a ``meta.json`` (not verified)."""
        validate_kind(kind)
        keys = []
        for shard in self._listdir(kind):
            if shard.startswith("."):
                continue
            for key in self._listdir(f"{kind}/{shard}"):
                if not key.startswith(".") and self._isfile(f"{kind}/{shard}/{key}/{META_FILE}"):
                    keys.append(key)
        return sorted(keys)

    def kinds(self) -> list[str]:
        """Sorted artifact kinds present in the store."""
        reserved = {RECORDS, QUARANTINE}
        return sorted(
            k
            for k in self._listdir("")
            if not k.startswith(".") and k not in reserved and not self._isfile(k)
        )

    def delete(self, ref: RefLike, *, missing_ok: bool = False) -> None:
        """Delete an artifact (data and meta).

        Raises
        ------
        ArtifactNotFoundError
            If it is not there and `missing_ok` is false.
        """
        ref = as_ref(ref)
        if not self._remove_dir(self._artifact_dir(ref.kind, ref.key)) and not missing_ok:
            raise ArtifactNotFoundError(
                f"Cannot delete artifact {ref.kind}/{ref.key}: not in store {self.url}."
            )

    def local_path(self, ref: RefLike) -> Path | None:
        """Local path of the artifact's data file, or ``None`` if the store is not local.

        The file is not verified: prefer ``get(ref, mmap=True)``, which checksums it first.

        Raises
        ------
        ArtifactNotFoundError
            If the store is local and the artifact is not in it.
        """
        ref = as_ref(ref)
        rel = f"{self._artifact_dir(ref.kind, ref.key)}/{_codecs.FILE_NAMES[ref.format]}"
        path = self._local(rel)
        if path is not None and not self._isfile(
            f"{self._artifact_dir(ref.kind, ref.key)}/{META_FILE}"
        ):
            raise ArtifactNotFoundError(f"No artifact {ref.kind}/{ref.key} in store {self.url}.")
        return path

    def quarantined(self) -> list[dict[str, Any]]:
        """What has been moved to ``<root>/quarantine/`` (kind, key, reason, when, where)."""
        out = []
        for kind in self._listdir(QUARANTINE):
            for entry in self._listdir(f"{QUARANTINE}/{kind}"):
                rel = f"{QUARANTINE}/{kind}/{entry}"
                try:
                    info = json.loads(self._read_bytes(f"{rel}/quarantine.json"))
                except (FileNotFoundError, ValueError):
                    info = {"kind": kind, "key": entry.rsplit(".", 2)[0]}
                out.append({**info, "path": self._display(rel)})
        return sorted(out, key=lambda d: str(d.get("detected", "")))

    # ------------------------------------------------------------------ verification

    def _read_meta(self, kind: str, key: str) -> dict[str, Any]:
        rel = f"{self._artifact_dir(kind, key)}/{META_FILE}"
        try:
            raw = self._read_bytes(rel)
        except FileNotFoundError:
            raise ArtifactNotFoundError(
                f"No artifact {kind}/{key} in store {self.url} "
                f"({self._display(rel)} does not exist)."
            ) from None
        try:
            meta = json.loads(raw)
            filename = _codecs.FILE_NAMES[meta["format"]]
            if meta.get("file", filename) != filename:
                raise ValueError(f"file {meta['file']!r} does not match format {meta['format']!r}")
            int(meta["size"])
            str(meta["sha256"])
        except (ValueError, KeyError, TypeError) as e:
            self._integrity(kind, key, f"{META_FILE} is unreadable ({type(e).__name__}: {e})", rel)
        return meta

    def _check(self, kind: str, key: str, *, load: bool = False) -> tuple[dict[str, Any], Any]:
        """``(meta, source)`` of a valid artifact; quarantine and raise if it is not valid."""
        meta = self._read_meta(kind, key)
        rel = f"{self._artifact_dir(kind, key)}/{meta['file']}"
        source = None
        try:
            if load:
                source, size, sha = self._verified_source(rel)
            else:
                size, sha = self._file_digest(rel)
        except FileNotFoundError:
            if not self._isfile(f"{self._artifact_dir(kind, key)}/{META_FILE}"):
                raise ArtifactNotFoundError(
                    f"Artifact {kind}/{key} was removed from store {self.url} while being read."
                ) from None
            self._integrity(kind, key, f"its data file {meta['file']} is missing", rel)
        if size != int(meta["size"]):
            self._integrity(
                kind,
                key,
                f"truncated or resized: {size} bytes where {meta['size']} were written",
                rel,
            )
        if sha != meta["sha256"]:
            self._integrity(
                kind,
                key,
                f"sha256 mismatch: file has {sha[:12]}..., meta.json records "
                f"{str(meta['sha256'])[:12]}...",
                rel,
            )
        return meta, source

    def _integrity(self, kind: str, key: str, reason: str, rel: str) -> NoReturn:
        where = self._display(rel)
        dest = self._quarantine(kind, key, reason, where)
        moved = (
            f"It was moved to {dest}; recompute it and put it again."
            if dest
            else "Another process already moved it away."
        )
        raise ArtifactIntegrityError(
            f"Artifact {kind}/{key} in store {self.url} is corrupt: {reason} ({where}). {moved}",
            kind=kind,
            key=key,
            path=where,
            quarantined_to=dest,
        )

    def _quarantine(self, kind: str, key: str, reason: str, where: str) -> str | None:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        dst = f"{QUARANTINE}/{kind}/{key}.{stamp}.{uuid.uuid4().hex[:8]}"
        if not self._move_dir(self._artifact_dir(kind, key), dst):
            return None
        info = {"kind": kind, "key": key, "reason": reason, "file": where, "detected": utc_now()}
        self._write_bytes(f"{dst}/quarantine.json", _codecs.to_json_bytes(info))
        logger.warning("Quarantined corrupt artifact %s/%s: %s", kind, key, reason)
        return self._display(dst)

    # ------------------------------------------------------------------ named records

    @staticmethod
    def _record_dir(kind: str, name: str) -> str:
        return f"{RECORDS}/{validate_kind(kind)}/{validate_name(name, 'record name')}"

    def record_versions(self, kind: str, name: str) -> list[int]:
        """Sorted version numbers stored for a record (empty if it does not exist)."""
        names = self._listdir(self._record_dir(kind, name))
        return sorted(int(m.group(1)) for n in names if (m := _RECORD_RE.fullmatch(n)))

    def record_version(self, kind: str, name: str) -> int:
        """Latest version of a record, or 0 if it does not exist."""
        versions = self.record_versions(kind, name)
        return versions[-1] if versions else 0

    def list_records(self, kind: str) -> list[str]:
        """Sorted names of the records of `kind`."""
        validate_kind(kind)
        return sorted(
            n
            for n in self._listdir(f"{RECORDS}/{kind}")
            if not n.startswith(".") and self.record_versions(kind, n)
        )

    def write_record(
        self, kind: str, name: str, data: Mapping[str, Any], *, expected_version: int | None = None
    ) -> int:
        """Store a new version of a named record; earlier versions are kept.

        Parameters
        ----------
        kind : str
            Record kind, such as ``"dataset"`` or ``"run"``.
        name : str
            User-supplied name; must match ``[A-Za-z0-9][A-Za-z0-9._-]{0,127}``, no ``..``.
        data : dict
            JSON-able content (numpy scalars are converted, tuples become lists).
        expected_version : int, optional
            Compare-and-swap: the latest version the caller has seen (0 = the record must not
            exist yet). If the store has another version, nothing is written and
            :class:`RecordConflictError` is raised. Without it, the new version goes after
            whatever is latest (concurrent writers each get their own version).

        Returns
        -------
        version : int
            The version written (1 for a new record).

        Raises
        ------
        ValueError
            If `kind` or `name` is invalid.
        TypeError
            If `data` is not JSON-able.
        RecordConflictError
            If `expected_version` is not the latest version.
        """
        rel_dir = self._record_dir(kind, name)
        if not isinstance(data, Mapping):
            raise TypeError(f"Record data must be a dict; got {type(data).__name__}.")
        payload = _codecs.to_jsonable(dict(data), f"record {kind}/{name}")
        digest = _sha256(_codecs.canonical_json(payload))
        found = self.record_version(kind, name)
        while True:
            if expected_version is not None and found != expected_version:
                raise self._conflict(kind, name, expected_version, found)
            version = found + 1
            envelope = {
                "format": RECORD_FORMAT,
                "storage_format": FORMAT_VERSION,
                "storage_version": __version__,
                "kind": kind,
                "name": name,
                "version": version,
                "created": utc_now(),
                "write_id": uuid.uuid4().hex,
                "sha256": digest,
                "data": payload,
            }
            body = json.dumps(envelope, sort_keys=True, indent=1, ensure_ascii=False).encode()
            if self._create_exclusive(f"{rel_dir}/v{version:06d}.json", body):
                return version
            found = self.record_version(kind, name)
            found = max(found, version)

    def read_record(self, kind: str, name: str, *, version: int | None = None) -> dict[str, Any]:
        """Return the content of a record (its latest version unless `version` is given).

        Raises
        ------
        ArtifactNotFoundError
            If the record or that version does not exist.
        ArtifactIntegrityError
            If the stored version fails its checksum (the file is left in place; older
            versions stay readable with `version`).
        """
        rel_dir = self._record_dir(kind, name)
        versions = self.record_versions(kind, name)
        if not versions:
            raise ArtifactNotFoundError(f"No record {kind}/{name} in store {self.url}.")
        if version is None:
            version = versions[-1]
        elif version not in versions:
            raise ArtifactNotFoundError(
                f"Record {kind}/{name} has no version {version} in store {self.url}; "
                f"versions: {versions}."
            )
        rel = f"{rel_dir}/v{version:06d}.json"
        try:
            envelope = json.loads(self._read_bytes(rel))
            payload = envelope["data"]
            ok = _sha256(_codecs.canonical_json(payload)) == envelope["sha256"]
        except (ValueError, KeyError, TypeError) as e:
            ok, payload = False, None
            reason = f"unreadable ({type(e).__name__}: {e})"
        else:
            reason = "sha256 mismatch"
        if not ok:
            raise ArtifactIntegrityError(
                f"Record {kind}/{name} version {version} in store {self.url} is corrupt: "
                f"{reason} ({self._display(rel)}). Other versions: "
                f"{[v for v in versions if v != version] or 'none'}.",
                kind=kind,
                key=name,
                path=self._display(rel),
            )
        return payload

    def _conflict(self, kind: str, name: str, expected: int, found: int) -> RecordConflictError:
        seen = "not to exist yet" if expected == 0 else f"to be at version {expected}"
        return RecordConflictError(
            f"Record {kind}/{name} changed concurrently: expected it {seen}, but store "
            f"{self.url} has version {found}. Re-read it and retry.",
            kind=kind,
            name=name,
            expected_version=expected,
            found_version=found,
        )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
