"""Locks that never outlive their owner: one process computes a step, others wait and reuse it.

``store.lock(name)`` is a context manager. Two owners never hold the same name at once; a
waiter polls until the holder is done (then typically finds the holder's artifact stored).

* A local store locks with ``flock(2)`` on ``<root>/.locks/<name>.lock``. The kernel
  releases the lock when its owner exits in any way (``SIGKILL``, out of memory), so a lock
  left by a killed command can never hang the next one. The holder removes the file before
  it unlocks; a waiter that locked a file meanwhile removed checks the inode and tries again.
* An fsspec store has no ``flock``: the lock is a lease file ``<root>/.locks/<name>.json``
  naming its owner (host, pid, the process's start time, boot id) and an expiry. A waiter
  breaks a lease whose owner is gone: on the same host (and boot), no live process with that
  pid and start time; on another host, once the lease has expired. Creating a lease is
  best-effort on object stores (no exclusive create): two owners at once cost a duplicate
  computation, never a wrong result, since artifacts are content-addressed.

:func:`process_identity` and :func:`owner_alive` also tell whether another process (an
embedded API server, say) is still the one a pid file names.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from storage._names import validate_name

__all__ = ["LOCKS_DIR", "LeaseLock", "LocksMixin", "flock_file", "owner_alive",
           "process_identity"]

#: Hidden folder of a store holding its lock files (ignored by every reader).
LOCKS_DIR = ".locks"
#: How long an fsspec lease counts as held by a process on another host.
LEASE_SECONDS = 15 * 60
_POLL = (0.02, 0.5)  # first and longest pause between two attempts


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), or None if it is gone
    (or has exited and awaits its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return "?"
        return "?"  # alive, but no /proc to tell it from a reused pid
    fields = stat.rpartition(")")[2].split()
    return None if fields[0] in ("Z", "X") else fields[19]  # a zombie has exited


def process_identity(pid: int | None = None) -> dict[str, Any]:
    """``{"host", "boot", "pid", "start"}`` of a process (default: this one)."""
    pid = os.getpid() if pid is None else pid
    return {"host": socket.gethostname(), "boot": _boot_id(), "pid": pid,
            "start": _start_time(pid)}


def owner_alive(owner: dict[str, Any]) -> bool | None:
    """Whether the process ``owner`` (a :func:`process_identity`) still runs: True or False
    on this host (and boot), None when it was on another host (or another boot: False)."""
    if owner.get("host") != socket.gethostname():
        return None
    if owner.get("boot") != _boot_id():
        return False
    start = _start_time(int(owner.get("pid", -1)))
    return start is not None and (start == "?" or start == owner.get("start"))


def _pauses(timeout: float | None) -> Iterator[None]:
    """Sleep between attempts with a growing pause; TimeoutError once ``timeout`` is over."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = _POLL[0]
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(errno.ETIMEDOUT, "timed out waiting for a lock")
        time.sleep(pause)
        pause = min(2 * pause, _POLL[1])
        yield


@contextlib.contextmanager
def flock_file(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created; removed when released)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pauses = _pauses(timeout)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    next(pauses)
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                current = None
            if current != os.fstat(fd).st_ino:
                continue  # the holder before us removed this file: lock the one there now
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps(process_identity()).encode())
            try:
                yield
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            return
        finally:
            os.close(fd)


class LeaseLock:
    """A lease file on a store without ``flock`` (see the module docstring).

    Parameters
    ----------
    create : callable
        ``create(data) -> bool``: create the lease file only if it does not exist.
    read : callable
        ``read() -> bytes``: the lease file (``FileNotFoundError`` if absent).
    remove : callable
        ``remove()``: delete the lease file (no error if absent).
    """

    def __init__(self, create: Callable[[bytes], bool], read: Callable[[], bytes],
                 remove: Callable[[], None]) -> None:
        self._create, self._read, self._remove = create, read, remove

    def _stale(self) -> bool:
        try:
            lease = json.loads(self._read())
        except FileNotFoundError:
            return False  # released meanwhile: just try again
        except ValueError:
            return True  # a half-written lease
        alive = owner_alive(lease.get("owner", {}))
        return alive is False or (alive is None and time.time() > lease.get("expires", 0))

    @contextlib.contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        me = {"owner": process_identity(), "expires": time.time() + LEASE_SECONDS}
        body = json.dumps(me).encode()
        pauses = _pauses(timeout)
        while not self._create(body):
            if self._stale():
                self._remove()
                continue
            next(pauses)
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                if self._read() == body:
                    self._remove()


class LocksMixin:
    """``store.lock(name)`` (mixed into :class:`~storage.base.BaseStore`)."""

    def lock(self, name: str, *, timeout: float | None = None) -> contextlib.AbstractContextManager:
        """Hold the lock ``name`` (a store-wide name, e.g. ``"dataset-blobs"``) while in the
        ``with`` block; wait while another process or thread holds it.

        Parameters
        ----------
        name : str
            ``[A-Za-z0-9][A-Za-z0-9._-]{0,127}``.
        timeout : float, optional
            Give up after this many seconds (``TimeoutError``); default: wait as long as the
            holder lives.
        """
        validate_name(name, "lock name")
        return self._lock(name, timeout)

    def _lock(self, name: str, timeout: float | None) -> contextlib.AbstractContextManager:
        raise NotImplementedError
