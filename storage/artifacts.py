"""Content-addressed artifacts: put, get, exists, list, delete; checksums and quarantine.

Written once on top of a :class:`~storage.backend.Backend`'s primitives. Artifacts live at
``<root>/<kind>/<key[:2]>/<key>/data.<ext>`` with ``meta.json`` beside; corrupt ones are
moved to ``<root>/quarantine/<kind>/<key>.<time>.<id>/``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import logging
import uuid
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from storage import _codecs, faults
from storage._names import validate_kind, validate_name
from storage._version import FORMAT_VERSION, __version__
from storage.backend import META_FILE, QUARANTINE, RECORDS
from storage.errors import ArtifactIntegrityError, ArtifactNotFoundError, write_error
from storage.refs import ArtifactRef, RefLike, as_ref, utc_now

__all__ = ["ArtifactsMixin"]

_DECODE_ERRORS = (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile)

logger = logging.getLogger("storage")


@functools.cache
def _fastmice_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastmice")
    except PackageNotFoundError:
        return None



class ArtifactsMixin:
    """The artifact logic of a store (mixed into :class:`~storage.base.BaseStore`)."""

    url: str

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
        stage = f"write:{kind}"
        try:
            self._publish(
                self._artifact_dir(kind, key),
                _codecs.FILE_NAMES[fmt],
                lambda f: _codecs.encode(fmt, prepared, faults.guard_writes(f, stage)),
                meta,
            )
        except OSError as e:
            raise write_error(e, f"artifact {kind}/{key}", self.url) from e
        faults.fault_point(f"published:{kind}")
        return ArtifactRef(kind, key, fmt)

    def get(self, ref: RefLike, *, mmap: bool = False, rows: bool = False) -> Any:
        """Load an artifact after verifying its size and sha256.

        Parameters
        ----------
        ref : ArtifactRef or dict
            What :meth:`put` returned (or its ``to_dict()``).
        mmap : bool, default=False
            Return an ``npy`` artifact of a local store as a read-only ``np.memmap`` instead of
            reading it into memory. Ignored for other formats and non-local stores.
        rows : bool, default=False
            Return a 2-D ``npy`` artifact of a local store as a row reader
            (:class:`storage.rows.NpyRows`): read a block of rows at a time, so that a view
            larger than memory costs only the block in use.

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
            return _codecs.decode(ref.format, source, mmap=mmap, rows=rows)
        except _DECODE_ERRORS as e:
            rel = f"{self._artifact_dir(ref.kind, ref.key)}/{meta['file']}"
            self._integrity(
                ref.kind,
                ref.key,
                f"cannot be decoded as {ref.format} ({type(e).__name__}: {e})",
                rel,
            )

    def verify(self, kind: str, key: str, *, quarantine: bool = False,
               expected: tuple[str, int] | None = None) -> str | None:
        """Why the artifact ``(kind, key)`` is corrupt, or ``None`` if it is valid.

        Checks ``meta.json`` and the data file's size and sha256 (as every read does). With
        ``quarantine`` a corrupt artifact is moved to ``<root>/quarantine/`` (as a read
        would); without it nothing is changed (``fastmice fsck`` without ``--repair``).
        ``expected``, the ``(format, size)`` the artifact was written with, lets a store
        over a network read ``meta.json`` and the data file at once (one round trip, not
        two); what the check decides is the same.

        Raises
        ------
        ArtifactNotFoundError
            If there is no such artifact (no ``meta.json``).
        """
        validate_kind(kind)
        validate_name(key, "key")
        try:
            self._check(kind, key, quarantine=quarantine, expected=expected)
        except ArtifactIntegrityError as e:
            return e.reason
        return None

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
        """What has been moved to ``<root>/quarantine/``: corrupt artifacts (``kind``,
        ``key``) and record versions (``kind``, ``record``, ``version``), each with its
        ``reason``, when it was ``detected`` and the ``path`` it was moved to."""
        out = []
        for kind in self._listdir(QUARANTINE):
            sub = f"{QUARANTINE}/{kind}"
            entries = ([(f"{sub}/{k}", k, e) for k in self._listdir(sub)
                        for e in self._listdir(f"{sub}/{k}")] if kind == RECORDS else
                       [(sub, kind, e) for e in self._listdir(sub)])
            for parent, entry_kind, entry in entries:
                rel = f"{parent}/{entry}"
                try:
                    info = json.loads(self._read_bytes(f"{rel}/quarantine.json"))
                except (FileNotFoundError, NotADirectoryError, ValueError):  # no note, a link
                    info = {"kind": entry_kind, "key": entry.rsplit(".", 2)[0]}
                out.append({**info, "path": self._display(rel)})
        return sorted(out, key=lambda d: str(d.get("detected", "")))

    # ------------------------------------------------------------------ verification

    def _read_meta(self, kind: str, key: str, *, quarantine: bool = True) -> dict[str, Any]:
        rel = f"{self._artifact_dir(kind, key)}/{META_FILE}"
        try:
            raw = self._read_bytes(rel)
        except (FileNotFoundError, NotADirectoryError):
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
            self._integrity(kind, key, f"{META_FILE} is unreadable ({type(e).__name__}: {e})", rel,
                            quarantine=quarantine)
        return meta

    def _check(self, kind: str, key: str, *, load: bool = False, quarantine: bool = True,
               expected: tuple[str, int] | None = None) -> tuple[dict[str, Any], Any]:
        """``(meta, source)`` of a valid artifact; quarantine (unless told not to) and raise
        if it is not valid."""
        early = None
        if expected is not None and self._round_trips and not load:
            meta, early = self._meta_and_digest(kind, key, *expected, quarantine=quarantine)
        else:
            meta = self._read_meta(kind, key, quarantine=quarantine)
        rel = f"{self._artifact_dir(kind, key)}/{meta['file']}"
        source = None
        try:
            if early is not None:
                size, sha = early
            elif load:
                source, size, sha = self._verified_source(rel)
            else:
                size, sha = self._file_digest(rel, int(meta["size"]))
        except FileNotFoundError:
            if not self._isfile(f"{self._artifact_dir(kind, key)}/{META_FILE}"):
                raise ArtifactNotFoundError(
                    f"Artifact {kind}/{key} was removed from store {self.url} while being read."
                ) from None
            self._integrity(kind, key, f"its data file {meta['file']} is missing", rel,
                            quarantine=quarantine)
        reason = None
        if size != int(meta["size"]):
            reason = f"truncated or resized: {size} bytes where {meta['size']} were written"
        elif sha != meta["sha256"]:
            reason = (f"sha256 mismatch: file has {sha[:12]}..., meta.json records "
                      f"{str(meta['sha256'])[:12]}...")
        if reason is not None:
            self._integrity(kind, key, reason, rel, quarantine=quarantine)
        return meta, source

    def _integrity(self, kind: str, key: str, reason: str, rel: str, *,
                   quarantine: bool = True) -> NoReturn:
        where = self._display(rel)
        dest = self._quarantine(kind, key, reason, where) if quarantine else None
        if not quarantine:
            moved = "It was left in place."
        elif dest:
            moved = f"It was moved to {dest}; recompute it and put it again."
        else:
            moved = "Another process already moved it away."
        raise ArtifactIntegrityError(
            f"Artifact {kind}/{key} in store {self.url} is corrupt: {reason} ({where}). {moved}",
            kind=kind,
            key=key,
            path=where,
            quarantined_to=dest,
            reason=reason,
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
