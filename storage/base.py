"""``BaseStore``: the artifact store every backend shares, assembled from its two halves.

A backend (:class:`~storage.local.LocalStore`, :class:`~storage.fsspec_store.FsspecStore`)
only provides the file primitives of :class:`~storage.backend.Backend`; artifacts (meta files,
checksums, quarantine) are implemented once in :mod:`storage.artifacts`, versioned records
once in :mod:`storage.records`, locks in :mod:`storage.locks`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage import _codecs
from storage.artifacts import ArtifactsMixin
from storage.backend import META_FILE, Backend
from storage.locks import LocksMixin
from storage.records import RecordsMixin
from storage.refs import ArtifactRef, ArtifactStore, utc_now

__all__ = ["META_FILE", "ArtifactRef", "ArtifactStore", "BaseStore", "utc_now"]


class BaseStore(ArtifactsMixin, RecordsMixin, LocksMixin, Backend):
    """Artifact store logic on top of a few file primitives (see the module docstring).

    Artifacts live at ``<root>/<kind>/<key[:2]>/<key>/data.<ext>`` with ``meta.json`` beside;
    named records at ``<root>/records/<kind>/<name>/v000001.json, v000002.json, ...``;
    corrupt artifacts are moved to ``<root>/quarantine/<kind>/<key>.<time>.<id>/`` (corrupt
    record versions to ``<root>/quarantine/records/<kind>/``); locks live in ``<root>/.locks/``.
    """

    #: Whether each read is a round trip over the network (an object store): then
    #: :meth:`concurrently` makes independent reads at once.
    _round_trips = False

    def concurrently(self, *calls: Callable[[], Any]) -> list[Any]:
        """The results of ``calls``, in order: independent reads (each a request or two),
        made at once on a store where each read is a round trip over the network, one after
        the other elsewhere. If any raises, the first exception (in the order of ``calls``)
        is raised once every call has finished."""
        from concurrent.futures import Future, ThreadPoolExecutor, wait

        if not self._round_trips or len(calls) < 2:
            futures: list[Future] = []
            for call in calls:
                futures.append(Future())
                try:
                    futures[-1].set_result(call())
                except Exception as e:
                    futures[-1].set_exception(e)
        else:
            with ThreadPoolExecutor(len(calls), thread_name_prefix="store-read") as pool:
                futures = [pool.submit(call) for call in calls]
                wait(futures)
        return [future.result() for future in futures]

    def _meta_and_digest(self, kind: str, key: str, fmt: str, size: int, *,
                         quarantine: bool) -> tuple[dict[str, Any], tuple[int, str] | None]:
        """``meta.json`` and, read at the same time, the digest of the data file the artifact
        was written with (``None`` if that file is absent or ``meta.json`` names another)."""
        filename = _codecs.FILE_NAMES.get(fmt)
        rel = f"{self._artifact_dir(kind, key)}/{filename}"

        def digest() -> tuple[int, str] | None:
            try:
                return self._file_digest(rel, size) if filename else None
            except (FileNotFoundError, NotADirectoryError):
                return None

        meta, early = self.concurrently(
            lambda: self._read_meta(kind, key, quarantine=quarantine), digest)
        return meta, early if meta.get("file") == filename else None
