"""Damaged input batches: finding them, reporting them, restoring them from the same data.

A dataset's files (views, ids, labels) are its input: unlike computed artifacts they cannot
be recomputed, so a missing or corrupt one is reported naming the dataset and the batch, and
registering the same data again stores it back under the same content key
(:meth:`~BatchRepairMixin.restore`). Mixed into :class:`storage.datasets.DatasetStore`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from storage._batches import as_stored, select
from storage.errors import ArtifactIntegrityError, ArtifactNotFoundError, DamagedBatchError
from storage.keys import content_key

__all__ = ["BatchRepairMixin"]

logger = logging.getLogger("storage")


def _files(batch: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """``(what, ref)`` of every file of a batch: ``view <v>``, ``ids``, ``labels``."""
    files = [(f"view {v}", ref) for v, ref in enumerate(batch["views"])]
    files.append(("ids", batch["ids"]))
    if batch.get("labels"):
        files.append(("labels", batch["labels"]))
    return files


class BatchRepairMixin:
    """Damage reports and restoration of a dataset's batches."""

    store: Any

    def damage(self, name: str, batches: int | Iterable[int] | None = None, *,
               manifest: dict[str, Any] | None = None,
               quarantine: bool = True) -> list[tuple[int, str, str]]:
        """The missing or corrupt files of some batches (default: all) of dataset ``name``.

        Every file is checksummed; with ``quarantine`` (the default, as any read) a corrupt
        one is set aside. Returns ``(batch_id, what, reason)`` for each damaged file, ``what``
        being ``"view <v>"``, ``"ids"`` or ``"labels"``.
        """
        manifest = manifest if manifest is not None else self.manifest(name)
        found = []
        for batch in select(manifest, batches):
            for what, ref in _files(batch):
                try:
                    reason = self.store.verify(ref["kind"], ref["key"], quarantine=quarantine)
                except ArtifactNotFoundError:
                    reason = "missing"
                if reason is not None:
                    found.append((batch["batch_id"], what, reason))
        return found

    def damaged_error(self, name: str, damage: Sequence[tuple[int, str, str]]
                      ) -> DamagedBatchError:
        """The error reporting ``damage`` (from :meth:`damage`) in one line."""
        batches = sorted({b for b, _, _ in damage})
        detail = "; ".join(f"batch {b} {what}: {reason}" for b, what, reason in damage[:4])
        more = f" (and {len(damage) - 4} more files)" if len(damage) > 4 else ""
        return DamagedBatchError(
            f"Dataset {name!r} has damaged input data in store {self.store.url}: {detail}{more}. "
            f"Input files cannot be recomputed (a corrupt one was set aside in quarantine): "
            f"register the same data again to restore {'them' if len(damage) > 1 else 'it'} "
            f"(`fastmice append {name} DATA` with the data of batch"
            f"{'es' if len(batches) > 1 else ''} {', '.join(map(str, batches))}, or "
            f"`fastmice cluster DATA --name {name}` for a one-batch dataset).",
            dataset=name, damage=list(damage))

    def read_views(self, name: str, batches: int | Iterable[int] | None = None,
                   mmap: bool = True, rows: bool = False) -> list[Any]:
        """:meth:`load_views`, with a missing or corrupt file reported as the damaged batch it
        belongs to (:class:`~storage.errors.DamagedBatchError`, naming the dataset, the batch
        and what to do) instead of a bare artifact error."""
        batches = None if batches is None else (
            [batches] if isinstance(batches, int | np.integer) else list(batches))
        try:
            return self.load_views(name, batches, mmap, rows)
        except (ArtifactNotFoundError, ArtifactIntegrityError) as exc:
            try:
                damage = self.damage(name, batches)
            except (ArtifactNotFoundError, ArtifactIntegrityError):
                raise exc from None
            if not damage:
                raise
            raise self.damaged_error(name, damage) from None

    def restore(self, name: str, batch_id: int, Xs: Sequence[Any],
                labels: Any = None, ids: Any = None) -> list[str]:
        """Store again the missing or corrupt files of batch ``batch_id`` from its data.

        ``Xs`` (and ``labels``) must be the batch's data: each file restored is checked
        against the content key the manifest records for it, and one that does not match is
        left alone. Ids are those given, else rebuilt when the batch had the default ids
        (consecutive from its first row). Returns what was restored (``["view 1", "ids"]``),
        also reported on the ``storage`` logger.
        """
        manifest = self.manifest(name)
        batch = select(manifest, batch_id)[0]
        views = as_stored(Xs)
        n = views[0].shape[0]
        candidates = {f"view {v}": X for v, X in enumerate(views)}
        candidates["ids"] = np.arange(batch["first_row"], batch["first_row"] + n,
                                      dtype=np.int64) if ids is None else np.asarray(ids)
        if labels is not None:
            candidates["labels"] = np.asarray(labels)
        restored = []
        for what, ref in _files(batch):
            if what not in candidates or self.store.exists(ref["kind"], ref["key"]):
                continue
            if content_key(candidates[what]) != ref["key"]:
                continue
            self.store.put(ref["kind"], ref["key"], candidates[what])
            restored.append(what)
        if restored:
            logger.warning("Restored %s of batch %d of dataset %r from the data given",
                           ", ".join(restored), batch_id, name)
        return restored
