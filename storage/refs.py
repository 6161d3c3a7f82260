"""Artifact refs and the store interface the pipeline programs against.

:class:`ArtifactRef` is the small, JSON-able pointer a task returns instead of an array;
:class:`ArtifactStore` is the protocol every store (:class:`~storage.base.BaseStore`) meets.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from storage import _codecs
from storage._names import validate_kind, validate_name

__all__ = ["ArtifactRef", "ArtifactStore", "RefLike", "as_ref", "utc_now"]


def utc_now() -> str:
    """The current UTC time as ISO 8601 with microseconds."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


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

