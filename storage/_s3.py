"""S3 clients that start fast: botocore's description of S3 is read once per process.

Creating an S3 client reads and parses botocore's data files (the S3 API, its endpoints and
endpoint rules: ~0.1 s), and s3fs creates a client for each filesystem it opens. The
:class:`~storage.fsspec_store.FsspecStore` of an ``s3://`` URL gives s3fs a botocore session
of this process (:func:`s3_options`) whose data loader is shared; :func:`warm_s3` fills that
loader, and makes an unused session, before a process forks the commands that will use them
(``cli.warm``). Neither reads credentials nor makes a request: a session reads its
credentials and configuration when its first client is made, in the process that uses it.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["s3_options", "warm_s3"]

_loader: Any = None
#: ``(pid, session)``: the session of process ``pid``; ``(None, session)``: one made by
#: :func:`warm_s3` and never used, which the first process to open an S3 store takes.
_session: tuple[int | None, Any] | None = None


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
        import aiobotocore.session  # noqa: F401
    except ImportError:  # no s3fs: fsspec says what to install
        return options
    if _session is None or _session[0] not in (None, os.getpid()):
        _session = (None, _new_session())
    if _session[0] is None:
        _session = (os.getpid(), _session[1])
    return {**options, "session": _session[1]}


def _new_session() -> Any:
    """A botocore session with the shared loader: nothing read from the environment or the
    AWS configuration files yet (that happens when a client is created)."""
    import aiobotocore.session

    session = aiobotocore.session.AioSession()
    session.register_component("data_loader", _shared_loader())
    return session


def warm_s3() -> None:
    """Load what creating an S3 client reads into the shared loader, and make a session
    that the first process to open an S3 store takes (each process forked from this one
    has its own copy, unused: its credentials and configuration are read there). No
    credentials are looked up, no request is made; ``ImportError`` without botocore."""
    global _session
    import asyncio

    async def create_client() -> None:
        async with _new_session().create_client(
                "s3", region_name="us-east-1", aws_access_key_id="warm",
                aws_secret_access_key="warm"):
            pass

    asyncio.run(create_client())
    if _session is None:
        _session = (None, _new_session())
