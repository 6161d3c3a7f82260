"""S3 clients that start fast: botocore's description of S3 is read once per process.

Creating an S3 client reads and parses botocore's data files (the S3 API, its endpoints and
endpoint rules: ~0.1 s), and s3fs creates a client for each filesystem it opens. The
:class:`~storage.fsspec_store.FsspecStore` of an ``s3://`` URL gives s3fs a botocore session
of this process (:func:`s3_options`) whose data loader is shared; :func:`warm_s3` fills that
loader, and makes an unused session, before a process forks the commands that will use them
(``processes.warm``). Neither reads credentials nor makes a request: a session reads its
credentials and configuration when its first client is made, in the process that uses it.

Likewise the SSL context that verifies the server's certificate: aiobotocore parses the CA
bundle (~25 ms) for each client's connections; here it is made once per process and bundle
(:func:`_verify_context`; a changed bundle file is read again), and :func:`warm_s3` makes the
default one before the fork.
"""

from __future__ import annotations

import contextlib
import os
import ssl
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
    """``options`` for s3fs: aiobotocore's HTTP session that keeps its verifying SSL context
    (unless they name an HTTP session class), and this process's botocore session (its data
    loader shared) unless they name a session or profile of their own, or ``AWS_DATA_PATH``
    is set."""
    global _session
    try:
        import aiobotocore.session  # noqa: F401
    except ImportError:  # no s3fs: fsspec says what to install
        return options
    config = options.get("config_kwargs") or {}
    if "http_session_cls" not in config:
        options = {**options, "config_kwargs": {**config,
                                                "http_session_cls": _http_session_class()}}
    if {"session", "profile"} & set(options) or os.environ.get("AWS_DATA_PATH"):
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
    has its own copy, unused: its credentials and configuration are read there), and the
    SSL context that verifies against this environment's CA bundle. No credentials are
    looked up, no request is made; ``ImportError`` without botocore."""
    global _session
    import asyncio

    async def create_client() -> None:
        from aiobotocore.config import AioConfig

        async with _new_session().create_client(
                "s3", region_name="us-east-1", aws_access_key_id="warm",
                aws_secret_access_key="warm",
                config=AioConfig(http_session_cls=_http_session_class())) as client:
            # The CA bundle this environment's clients verify against (AWS_CA_BUNDLE, the
            # configuration's ca_bundle, certifi's), parsed into the shared context. One that
            # cannot be read is left to the command that uses S3 to report.
            with contextlib.suppress(OSError, ssl.SSLError):
                client._endpoint.http_session._build_ssl_contexts(None)

    asyncio.run(create_client())
    if _session is None:
        _session = (None, _new_session())


#: ``(bundle path, its mtime and size) -> SSLContext``: the verifying contexts made so far.
_contexts: dict[tuple[str, int, int], Any] = {}
_http_session: Any = None


def _verify_context(bundle: str, build: Any) -> Any:
    """The SSL context that verifies against CA bundle ``bundle`` as aiobotocore makes it
    (``build()``): made once per process and version of the file, shared by every
    connection (an ``SSLContext`` is not changed by the connections that use it)."""
    stat = os.stat(bundle)
    key = (os.path.abspath(bundle), stat.st_mtime_ns, stat.st_size)
    if key not in _contexts:
        _contexts[key] = build()
    return _contexts[key]


def _http_session_class() -> Any:
    """aiobotocore's HTTP session whose verifying SSL context comes from
    :func:`_verify_context` when nothing else is asked of it (a client certificate, a
    proxy, no verification, a bundle that is no file): then aiobotocore builds its own."""
    global _http_session
    if _http_session is None:
        from aiobotocore.httpsession import AIOHTTPSession
        from botocore.httpsession import get_cert_path

        class CachedVerifyHTTPSession(AIOHTTPSession):
            def _build_ssl_contexts(self, proxy_url: str | None) -> tuple[Any, Any]:
                bundle = get_cert_path(self._verify) if self._verify else None
                if self._cert_file or proxy_url or not bundle or not os.path.isfile(bundle):
                    return super()._build_ssl_contexts(proxy_url)
                return _verify_context(bundle, self._build_verify_context), None

        _http_session = CachedVerifyHTTPSession
    return _http_session
