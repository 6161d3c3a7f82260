"""S3 clients that start fast: botocore's description of S3 is read once per process.

Creating an S3 client reads and parses botocore's data files (the S3 API, its endpoints and
endpoint rules: ~0.1 s), and s3fs creates a client for each filesystem it opens. The
:class:`~storage.fsspec_store.FsspecStore` of an ``s3://`` URL gives s3fs a botocore session
of this process (:func:`s3_options`) whose data loader is shared; :func:`warm_s3` fills that
loader before a process forks the commands that will use it (``cli.warm``). Neither reads
credentials nor makes a request: a session, with its credentials, belongs to the process
that made it.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["s3_options", "warm_s3"]

_loader: Any = None
_session: tuple[int, Any] | None = None


def _shared_loader() -> Any:
    global _loader
    if _loader is None:
        from botocore.loaders import create_loader

        _loader = create_loader()
    return _loader


def s3_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for s3fs, with this process's botocore session (its data loader shared)
    unless they name a session or profile of their own, or ``AWS_DATA_PATH`` is set."""
    global _session
    if {"session", "profile"} & set(options) or os.environ.get("AWS_DATA_PATH"):
        return options
    try:
        import aiobotocore.session
    except ImportError:  # no s3fs: fsspec says what to install
        return options
    if _session is None or _session[0] != os.getpid():
        session = aiobotocore.session.AioSession()
        session.register_component("data_loader", _shared_loader())
        _session = (os.getpid(), session)
    return {**options, "session": _session[1]}


def warm_s3() -> None:
    """Load what creating an S3 client reads into the shared loader (no credentials are
    looked up, no request is made); ``ImportError`` without botocore."""
    import botocore.session

    session = botocore.session.Session()
    session.register_component("data_loader", _shared_loader())
    session.create_client("s3", region_name="us-east-1", aws_access_key_id="warm",
                          aws_secret_access_key="warm").close()
