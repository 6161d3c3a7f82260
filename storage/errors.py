"""Exceptions raised by the artifact store.

Every error names what it is about (the artifact kind and key, the record kind and name, or the
file path) so that a failed pipeline run can be diagnosed from its message alone.
"""

from __future__ import annotations

__all__ = [
    "ArtifactIntegrityError",
    "ArtifactNotFoundError",
    "DamagedBatchError",
    "RecordConflictError",
    "StoreWriteError",
    "write_error",
]


class ArtifactNotFoundError(KeyError):
    """An artifact or a named record is not in the store.

    Subclasses :class:`KeyError`, so ``except KeyError`` also catches it. Unlike a plain
    ``KeyError``, ``str(error)`` is the readable message rather than its ``repr``.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ArtifactIntegrityError(ValueError):
    """A stored artifact or record does not match its recorded checksum or cannot be decoded.

    The artifact (or record version) is moved into ``<root>/quarantine/`` before this is
    raised, so a caller can recompute and ``put`` it again.

    Attributes
    ----------
    kind, key : str
        The artifact kind and key (for records: the record kind and name).
    path : str
        Where the bad file was found.
    quarantined_to : str or None
        Where the artifact was moved, if it was moved.
    reason : str
        What is wrong, in a few words (``"sha256 mismatch: ..."``).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "",
        key: str = "",
        path: str = "",
        quarantined_to: str | None = None,
        reason: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.key = key
        self.path = path
        self.quarantined_to = quarantined_to
        self.reason = reason or message


class RecordConflictError(RuntimeError):
    """A named record changed between reading it and writing its next version.

    Raised by ``write_record(..., expected_version=v)`` when the latest stored version is not
    ``v`` (another writer got there first). Nothing is written; re-read the record and retry.

    Attributes
    ----------
    kind, name : str
        The record.
    expected_version : int
        The version the caller based its change on (0 = "the record must not exist yet").
    found_version : int
        The latest version found in the store.
    """

    def __init__(
        self, message: str, *, kind: str, name: str, expected_version: int, found_version: int
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name
        self.expected_version = expected_version
        self.found_version = found_version


class DamagedBatchError(ValueError):
    """A stored input batch of a dataset has a missing or corrupt file.

    Input data cannot be recomputed: registering the same data again (``fastmice append
    DATASET DATA``, or ``fastmice cluster DATA --name DATASET`` for a one-batch dataset)
    stores the file again under the same content key.

    Attributes
    ----------
    dataset : str
    damage : list of (batch_id, what, reason)
        Each damaged file: its batch, ``"view <v>"``, ``"ids"`` or ``"labels"``, and why.
    """

    def __init__(self, message: str, *, dataset: str,
                 damage: list[tuple[int, str, str]]) -> None:
        super().__init__(message)
        self.dataset = dataset
        self.damage = damage


class StoreWriteError(OSError):
    """Writing to the store failed (a full disk, say); nothing half-written is visible.

    An :class:`OSError` with the original ``errno``, whose message names the artifact or
    record and the store.
    """

    def __str__(self) -> str:
        return str(self.strerror or super().__str__())


def write_error(e: OSError, what: str, store: str) -> StoreWriteError:
    """A failed write (a full disk, no permission...) as one line naming what and where."""
    if isinstance(e, StoreWriteError):
        return e
    return StoreWriteError(
        e.errno,
        f"{e.strerror or e} while writing {what} to store {store}; nothing of it was stored "
        f"(fix the cause, e.g. free space, and rerun the same command)",
    )
