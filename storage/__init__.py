"""fastmice artifact store: content-addressed, checksummed, pickle-free storage of results.

>>> from storage import open_store, content_key
>>> store = open_store()                       # $FASTMICE_STORE or ./.fastmice  # doctest: +SKIP
>>> ref = store.put("anchor-graph", content_key(data_fp, spec, CODE_VERSION), B)  # doctest: +SKIP
>>> B = store.get(ref)                         # checksum verified              # doctest: +SKIP

This package imports only numpy and the standard library when imported; scipy, pyarrow and
fsspec are imported when first needed. It never imports prefect.
"""

from __future__ import annotations

from storage._names import NAME_PATTERN, validate_kind, validate_name
from storage._open import DEFAULT_ROOT, STORE_ENV, open_store
from storage._s3 import warm_s3
from storage._version import FORMAT_VERSION, __version__
from storage.atomic import write_file_atomic
from storage.base import ArtifactRef, ArtifactStore, BaseStore, utc_now
from storage.datasets import DatasetStore
from storage.errors import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    DamagedBatchError,
    RecordConflictError,
    StoreWriteError,
)
from storage.fsspec_store import FsspecStore
from storage.keys import content_key
from storage.local import LocalStore
from storage.tables import labels_from_table, labels_table

__all__ = [
    "DEFAULT_ROOT",
    "FORMAT_VERSION",
    "NAME_PATTERN",
    "STORE_ENV",
    "ArtifactIntegrityError",
    "ArtifactNotFoundError",
    "ArtifactRef",
    "ArtifactStore",
    "BaseStore",
    "DamagedBatchError",
    "DatasetStore",
    "FsspecStore",
    "LocalStore",
    "RecordConflictError",
    "StoreWriteError",
    "__version__",
    "content_key",
    "labels_from_table",
    "labels_table",
    "open_store",
    "utc_now",
    "validate_kind",
    "validate_name",
    "warm_s3",
    "write_file_atomic",
]
