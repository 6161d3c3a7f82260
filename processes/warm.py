"""The warm process: ``fastmice`` commands run with everything already imported.

Started by a command that used the shared local API server (:func:`spawn`, detached, in the
environment that command was started with), it imports the command line, the flows,
Prefect and matplotlib once, then listens on the Unix socket
:func:`processes.warm_socket.warm_socket` names (``$TMPDIR/fastmice-warm-<uid>/``, a
folder only its user can enter). For each command it forks a child that takes the
command's standard streams, working directory, environment and umask and runs the
command's entry function (named when it is started: ``python -m processes.warm SOCKET
MODULE:FUNCTION``; the command line's is ``cli.main:main``); the child tells the command
its pid (signals are forwarded to it) and, at the end, its exit status. If the command goes away
(``kill -9``, a closed terminal), the child and every process it started are killed, as
they would be with the command.

It stops when the shared server it was started for stops, or after ``FASTMICE_API_IDLE``
seconds without a command; one runs per environment and code version (a second one exits
at once), and one whose code changed on disk is never used (the socket's name changes).
Its log is ``<socket>.log``.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib
import io
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from processes.daemons import register, used_stamp
from processes.warm_socket import warm_socket

__all__ = ["serve", "spawn"]

ROOT = Path(__file__).resolve().parents[1]
#: Modules a command may import late; the warm process imports them once.
WARM_MODULES = ("flows.pipeline", "flows.runners", "pipeline.progress",
                "pipeline.report", "pipeline.report_render", "pipeline.report_figures",
                "matplotlib.backends.backend_svg", "prefect.artifacts", "prefect.flow_engine",
                "prefect.task_engine", "prefect.utilities.visualization", "fastapi",
                "pyarrow.dataset", "pyarrow.compute", "fastmice.metrics")
#: ... and those of an optional extra, when installed and the environment points at S3
#: (:func:`_uses_s3`; s3fs: ~0.8 s; with it, botocore's description of S3 is read once:
#: :func:`storage.warm_s3`; ~29 MB resident, left out otherwise).
OPTIONAL_MODULES = ("s3fs",)


def _uses_s3(environ: Mapping[str, str]) -> bool:
    """Whether commands of this environment may use an S3 store: an ``AWS_*`` variable (but
    ``AWS_CA_BUNDLE``, which machines set for any HTTPS), an ``s3://`` ``FASTMICE_STORE``,
    or an AWS configuration in the home folder."""
    return (any(name.startswith("AWS_") and name != "AWS_CA_BUNDLE" for name in environ)
            or environ.get("FASTMICE_STORE", "").startswith("s3://")
            or (Path.home() / ".aws").is_dir())


def _lock(path: Path) -> int | None:
    """An exclusive, non-blocking ``flock`` on ``path``; its descriptor, or None if taken."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def spawn(environ: Mapping[str, str], entry: str) -> int | None:
    """Start the warm process for commands in ``environ``, unless one runs already; its pid
    (None if none was started). ``entry`` (``"module:function"``) runs each command: it is
    given the command's arguments and returns its exit status."""
    path = warm_socket(environ)
    if path is None:
        return None
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = _lock(path.with_suffix(".lock"))
    if fd is None:
        return None  # one runs (or is starting)
    os.close(fd)
    env = dict(environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), environ.get("PYTHONPATH")])))
    with open(path.with_suffix(".log"), "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "processes.warm", str(path), entry],
                                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, close_fds=True).pid


def _shared_server() -> dict[str, Any] | None:
    """The shared API server of this environment's Prefect home, if it runs; its URL is put
    in ``PREFECT_API_URL`` before Prefect is imported."""
    from processes.api_server import healthy
    from processes.engine import configure_environment
    from processes.shared_api import shared_folder
    from storage.locks import owner_alive

    configure_environment(False)
    home = os.environ.get("PREFECT_HOME") or os.path.expanduser("~/.prefect")
    try:
        info = json.loads((shared_folder(home) / "shared.json").read_text())
    except (OSError, ValueError):
        return None
    url = f"http://127.0.0.1:{info['port']}/api"
    if not owner_alive(info["server"]) or not healthy(url):
        return None
    os.environ["PREFECT_API_URL"] = url
    return info


def _read_request(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The command's request and its three standard streams' descriptors."""
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    if len(data) < 4 or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("not a fastmice command")
    size = struct.unpack("!I", data[:4])[0]
    data = data[4:]
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ValueError("the command hung up")
        data += chunk
    return json.loads(data), fds


def _streams(fds: list[int]) -> None:
    """Make the command's descriptors this process's standard streams."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    encoding = sys.stdout.encoding or "utf-8"
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=encoding)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding,
                                  line_buffering=os.isatty(1), errors="backslashreplace")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=encoding,
                                  line_buffering=True, errors="backslashreplace")


def _entry(entry: str) -> Any:
    """The function ``"module:function"`` names (its module imported)."""
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)


def _run_child(connection: socket.socket, request: dict[str, Any], fds: list[int],
               entry: str) -> None:
    """In the forked child: run the command as the command itself would; never returns."""
    os.setpgrp()  # the command's own processes (Dask workers, say) go with it
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    atexit._clear()  # the warm process's exit handlers are not the command's
    _streams(fds)
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["fastmice", *request["argv"]]
    finished = threading.Event()

    def watch_command() -> None:  # the command went away: so does everything it started
        with contextlib.suppress(OSError):
            while connection.recv(1024):
                pass
        if not finished.is_set():
            os.killpg(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch_command, name="fastmice-warm-watch", daemon=True).start()
    status = 1
    try:
        connection.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        if os.environ.get("FASTMICE_DEBUG"):
            print(f"fastmice: run by the warm process {os.getppid()} in process "
                  f"{os.getpid()}", file=sys.stderr, flush=True)
        status = _entry(entry)(request["argv"])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
            _join_threads()
            sys.stdout.flush()
            sys.stderr.flush()
        finished.set()
        with contextlib.suppress(OSError):
            connection.sendall(json.dumps({"exit": status}).encode() + b"\n")
        os._exit(status)


def _join_threads(timeout: float = 30.0) -> None:
    """Wait for the command's non-daemon threads, as the interpreter would at exit."""
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))


def _reap() -> int:
    """Collect finished children; how many still run."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    running = 0
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            children = (task / "children").read_text().split()
            running += len(children)
    return running


def _accept(listener: socket.socket, idle: float, server: dict[str, Any], used: Path,
            entry: str) -> None:
    """Serve commands until the shared server is gone or ``idle`` seconds pass unused (the
    time of the last command is ``used``'s)."""
    from storage.locks import owner_alive

    last_used = time.monotonic()
    while owner_alive(server["server"]):
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            if _reap():
                last_used = time.monotonic()
            elif time.monotonic() - last_used > idle:
                return
            continue
        last_used = time.monotonic()
        with contextlib.suppress(OSError):
            os.utime(used)  # for `fastmice daemon status`
        with connection:
            connection.settimeout(5.0)  # a client that sends nothing cannot stall the others
            uid = struct.unpack("3i", connection.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
            try:
                if uid != os.getuid():
                    raise ValueError(f"a command of user {uid}")
                request, fds = _read_request(connection)
            except (OSError, ValueError) as exc:
                print(f"refused a connection: {exc}", file=sys.stderr, flush=True)
                continue
            if os.fork() == 0:
                listener.close()
                connection.settimeout(None)
                _run_child(connection, request, fds, entry)
            for fd in fds:
                os.close(fd)


def _warm_s3() -> None:
    """Import the S3 extra and prepare its clients (~10 ms to start one, not ~100 ms)."""
    for module in OPTIONAL_MODULES:
        with contextlib.suppress(ImportError):
            __import__(module)
    try:
        from storage import warm_s3

        warm_s3()
    except ImportError:
        pass
    except Exception as exc:  # the AWS configuration: a command using S3 will say what
        print(f"S3 clients not prepared: {exc!r}", file=sys.stderr)


def serve(path: Path, entry: str) -> int:
    """Import everything, then serve the commands of ``path`` with ``entry``
    (``"module:function"``; see the module)."""
    from processes.shared_api import idle_seconds

    lock = _lock(path.with_suffix(".lock"))
    if lock is None:
        return 0  # another warm process serves this socket
    server = _shared_server()
    if server is None:
        print("no shared API server runs: nothing to serve", file=sys.stderr)
        return 0
    for module in (entry.partition(":")[0], *WARM_MODULES):
        __import__(module)
    if _uses_s3(os.environ):
        _warm_s3()
    if threading.active_count() != 1:  # forking a process with threads is not safe
        print(f"threads after imports: {threading.enumerate()}; not serving", file=sys.stderr)
        return 1
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(16)
    listener.settimeout(1.0)
    print(f"serving {path} (pid {os.getpid()})", file=sys.stderr, flush=True)
    registered = register("warm", {"socket": str(path), "python": sys.prefix,
                                   "idle": idle_seconds(), "server": server["server"],
                                   "used": str(used_stamp(path))})
    signal.signal(signal.SIGTERM, _stop_serving)  # `fastmice daemon stop`: clean up below
    try:
        _accept(listener, idle_seconds(), server, used_stamp(path), entry)
    except SystemExit:
        pass
    finally:
        path.unlink(missing_ok=True)
        used_stamp(path).unlink(missing_ok=True)
        registered.unlink(missing_ok=True)
        listener.close()
    return 0


def _stop_serving(signum: int, frame: Any) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1]), sys.argv[2]))
