"""Named, versioned records (datasets, runs): one immutable JSON file per version.

Written once on top of a :class:`~storage.backend.Backend`'s primitives, at
``<root>/records/<kind>/<name>/v000001.json, v000002.json, ...``; creating a version is a
compare-and-swap (``_create_exclusive``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Mapping
from typing import Any

from storage import _codecs, faults
from storage._names import validate_kind, validate_name
from storage._version import FORMAT_VERSION, __version__
from storage.backend import QUARANTINE, RECORDS
from storage.errors import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    RecordConflictError,
    StoreEscapeError,
    write_error,
)
from storage.refs import utc_now

__all__ = ["RecordsMixin"]

RECORD_FORMAT = "fastmice-record"
_RECORD_RE = re.compile(r"v(\d{6,})\.json")

logger = logging.getLogger("storage")


class RecordsMixin:
    """The named-record logic of a store (mixed into :class:`~storage.base.BaseStore`)."""

    url: str

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
        """Sorted names of the records of `kind` (one whose folder leads out of the store
        through a symbolic link is left out, and reported on the ``storage`` logger)."""
        validate_kind(kind)
        names = []
        for n in self._listdir(f"{RECORDS}/{kind}"):
            try:
                if not n.startswith(".") and self.record_versions(kind, n):
                    names.append(n)
            except StoreEscapeError as e:
                logger.warning("%s", e)
        return sorted(names)

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
            try:
                faults.fault_point(f"record:{kind}")
                created = self._create_exclusive(f"{rel_dir}/v{version:06d}.json", body)
            except OSError as e:
                raise write_error(e, f"record {kind}/{name}", self.url) from e
            if created:
                return version
            found = self.record_version(kind, name)
            found = max(found, version)

    def read_record(self, kind: str, name: str, *, version: int | None = None) -> dict[str, Any]:
        """Return the content of a record (its latest valid version unless `version` is given).

        A corrupt or truncated version is treated as every reader treats a corrupt artifact:
        it is moved to ``<root>/quarantine/records/``, with a ``quarantine.json`` saying why,
        reported in one line on the ``storage`` logger, and the reader goes on, here with the
        version before it.

        Raises
        ------
        ArtifactNotFoundError
            If the record or that version does not exist.
        ArtifactIntegrityError
            If the version asked for, or every version, is corrupt (each was quarantined).
        """
        if version is None:
            return self.read_latest(kind, name)[1]
        try:  # one read; the versions are listed only to say which exist
            payload, reason = self._load_version(kind, name, version)
        except ArtifactNotFoundError:
            versions = self.record_versions(kind, name)
            raise ArtifactNotFoundError(
                f"Record {kind}/{name} has no version {version} in store {self.url}; "
                f"versions: {versions or 'none'}."
            ) from None
        if reason is not None:
            raise self._corrupt_record(kind, name, version, reason)
        return payload

    def read_latest(self, kind: str, name: str) -> tuple[int, dict[str, Any]]:
        """``(version, content)`` of the latest valid version of a record (see
        :meth:`read_record`: corrupt later versions are quarantined on the way)."""
        versions = self.record_versions(kind, name)
        if not versions:
            raise ArtifactNotFoundError(f"No record {kind}/{name} in store {self.url}.")
        errors = []
        for version in reversed(versions):
            payload, reason = self._load_version(kind, name, version)
            if reason is None:
                return version, payload
            errors.append(self._corrupt_record(kind, name, version, reason))
        first = errors[-1]
        raise ArtifactIntegrityError(
            f"Record {kind}/{name} in store {self.url} is corrupt: {first.reason} "
            f"({first.path}); " + (f"so were all {len(errors)} versions; " if len(errors) > 1
                                   else "") + f"set aside in quarantine ({first.quarantined_to}).",
            kind=kind, key=name, path=first.path, quarantined_to=first.quarantined_to,
            reason=first.reason,
        )

    def verify_record(self, kind: str, name: str, version: int, *,
                      quarantine: bool = False) -> str | None:
        """Why a record version is corrupt, or ``None`` if it is valid; with ``quarantine``
        a corrupt version is set aside (as a read does)."""
        _, reason = self._load_version(kind, name, version)
        if reason is not None and quarantine:
            self._corrupt_record(kind, name, version, reason)
        return reason

    def _load_version(self, kind: str, name: str,
                      version: int) -> tuple[dict[str, Any] | None, str | None]:
        """``(content, None)``, or ``(None, reason)`` if the version is corrupt."""
        rel = f"{self._record_dir(kind, name)}/v{version:06d}.json"
        try:
            envelope = json.loads(self._read_bytes(rel))
            payload = envelope["data"]
            if not isinstance(payload, dict):
                raise TypeError(f"its data is a {type(payload).__name__}, not a dict")
            ok = _sha256(_codecs.canonical_json(payload)) == envelope["sha256"]
        except FileNotFoundError:
            raise ArtifactNotFoundError(
                f"Record {kind}/{name} version {version} was removed from store {self.url} "
                f"while being read.") from None
        except (ValueError, KeyError, TypeError) as e:
            return None, f"unreadable ({type(e).__name__}: {e})"
        return (payload, None) if ok else (None, "sha256 mismatch")

    def _corrupt_record(self, kind: str, name: str, version: int,
                        reason: str) -> ArtifactIntegrityError:
        """Quarantine a corrupt record version; the error saying so (not raised)."""
        file = f"v{version:06d}.json"
        rel = f"{self._record_dir(kind, name)}/{file}"
        where = self._display(rel)
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        dst = f"{QUARANTINE}/{RECORDS}/{kind}/{name}.{file[:-5]}.{stamp}.{uuid.uuid4().hex[:8]}"
        moved = self._move_file(rel, f"{dst}/{file}")
        if moved:
            info = {"kind": kind, "record": name, "version": version, "reason": reason,
                    "file": where, "detected": utc_now()}
            self._write_bytes(f"{dst}/quarantine.json", _codecs.to_json_bytes(info))
            logger.warning("Quarantined corrupt record %s/%s version %d: %s (moved to %s)",
                           kind, name, version, reason, self._display(dst))
        dest = self._display(dst) if moved else None
        return ArtifactIntegrityError(
            f"Record {kind}/{name} version {version} in store {self.url} is corrupt: {reason} "
            f"({where}). " + (f"It was moved to {dest}." if dest else
                              "Another process already moved it away."),
            kind=kind, key=name, path=where, quarantined_to=dest, reason=reason,
        )

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
