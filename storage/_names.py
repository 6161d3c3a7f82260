"""Validation of user-supplied names, artifact kinds and keys (they become path components)."""

from __future__ import annotations

import re

__all__ = ["KIND_PATTERN", "NAME_PATTERN", "RESERVED_KINDS", "validate_kind", "validate_name"]

#: Names of datasets, runs and other records, and artifact keys.
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
#: Artifact and record kinds: lower-case nouns such as ``"anchor-graph"``.
KIND_PATTERN = r"[a-z0-9][a-z0-9_-]{0,63}"
#: Top-level folders of a store that are not artifact kinds.
RESERVED_KINDS = frozenset({"records", "quarantine"})

_NAME_RE = re.compile(NAME_PATTERN)
_KIND_RE = re.compile(KIND_PATTERN)


def validate_name(name: object, what: str = "name") -> str:
    """Check that `name` is a safe single path component and return it.

    Parameters
    ----------
    name : str
        A dataset name, run name, record name or artifact key.
    what : str, default="name"
        What the name is, for the error message (``"dataset name"``, ``"key"``...).

    Returns
    -------
    name : str
        The same string.

    Raises
    ------
    TypeError
        If `name` is not a ``str``.
    ValueError
        If `name` does not match ``[A-Za-z0-9][A-Za-z0-9._-]{0,127}`` or contains ``..``; the
        message quotes the bad name. Such a name can never contain a path separator, so it
        cannot escape the store root.
    """
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str; got {type(name).__name__} {name!r}.")
    if not _NAME_RE.fullmatch(name) or ".." in name:
        shown = name if len(name) <= 80 else name[:77] + "..."
        raise ValueError(
            f"Invalid {what} {shown!r} (length {len(name)}): expected 1 to 128 characters "
            f"from letters, digits, '.', '_' and '-', starting with a letter or digit, with no "
            f"'/' and no '..' (pattern {NAME_PATTERN})."
        )
    return name


def validate_kind(kind: object) -> str:
    """Check an artifact or record kind (a lower-case noun such as ``"anchor-graph"``).

    Parameters
    ----------
    kind : str
        Must match ``[a-z0-9][a-z0-9_-]{0,63}`` and not be ``"records"`` or ``"quarantine"``.

    Returns
    -------
    kind : str
        The same string.

    Raises
    ------
    TypeError
        If `kind` is not a ``str``.
    ValueError
        If `kind` does not match the pattern or is reserved.
    """
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str; got {type(kind).__name__} {kind!r}.")
    if not _KIND_RE.fullmatch(kind):
        raise ValueError(
            f"Invalid kind {kind!r}: expected a lower-case noun of 1 to 64 characters from "
            f"a-z, 0-9, '_' and '-' (pattern {KIND_PATTERN}), such as 'anchor-graph'."
        )
    if kind in RESERVED_KINDS:
        raise ValueError(
            f"Invalid kind {kind!r}: {sorted(RESERVED_KINDS)} are reserved store folders."
        )
    return kind
