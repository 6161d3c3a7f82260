"""The serve process, kept alive through faults: a lost server, a killed serve, a failed run.

:func:`serve_supervised` serves the deployments of :mod:`flows.deployments` with Prefect's
runner and a watch beside it:

* **before serving**, it waits for the API to answer (up to ``grace`` seconds, said in one
  line), and marks *Crashed* every run of the deployments left Running or Pending by a serve
  process or a server that was killed (no process runs it any more): such a run would hold
  the inbox deployment's one concurrency slot for ever;
* **a server that stops answering** (killed, restarted) is noticed within seconds by the
  watch thread, which says so in one line, stops the runs in flight (their processes) and
  waits up to ``grace`` seconds: when the server answers again, the process starts afresh
  (``exec`` of the same command: a new runner, the deployments applied again); otherwise it
  exits with status 3 and one line naming the server. Prefect's own retry logs meanwhile are
  kept to one line each, never a traceback (:class:`OneLineErrors`);
* any other error that stops the runner ends the process with one line and status 1.

Every process a flow run starts carries ``FASTMICE_SERVED_BY=<pid of the serve process>``,
so that ``infra/serve.sh stop`` finds a run left behind by a serve process killed with
``SIGKILL``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import logging
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["EXIT_LOST", "OneLineErrors", "OneLineTracebacks", "api_answers", "describe",
           "install_one_line_errors", "is_connection_error", "serve_supervised",
           "stop_runs_in_flight"]

#: Exit status of a serve process whose server did not come back.
EXIT_LOST = 3
#: Seconds without an answer before the server counts as lost: nothing listening, or busy.
LOST_AFTER = 5.0
BUSY_LOST_AFTER = 60.0
#: Names of the exception types a lost connection raises (httpx, websockets, anyio).
_CONNECTION_ERRORS = {"ConnectError", "ConnectTimeout", "ReadError", "WriteError",
                      "ReadTimeout", "PoolTimeout", "RemoteProtocolError", "TransportError",
                      "ConnectionClosed", "ConnectionClosedError", "ConnectionClosedOK",
                      "InvalidStatus", "InvalidMessage", "BrokenResourceError",
                      "ClosedResourceError", "EndOfStream"}
_lost = threading.Event()


def _say(text: str) -> None:
    print(f"fastmice serve: {text}", file=sys.stderr, flush=True)


def api_answers(url: str, timeout: float = 3.0) -> bool:
    """Whether the Prefect API at ``url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/health", timeout=timeout) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def _wait_for(url: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not api_answers(url):
        if time.monotonic() >= deadline:
            return False
        time.sleep(1.0)
    return True


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc``, its causes and contexts, and the members of exception groups."""
    seen: set[int] = set()
    todo = [exc] if exc is not None else []
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        todo.extend(e for e in (item.__cause__, item.__context__) if e is not None)
        todo.extend(getattr(item, "exceptions", ()) or ())


def is_connection_error(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) is a lost connection to the API."""
    for item in _chain(exc):
        names = {cls.__name__ for cls in type(item).__mro__}
        if names & _CONNECTION_ERRORS or isinstance(item, ConnectionError):
            return True
    return False


def _no_space(exc: BaseException | None) -> bool:
    return any(isinstance(item, OSError) and item.errno == errno.ENOSPC for item in _chain(exc))


def describe(exc: BaseException) -> str:
    """One line: the innermost useful message of ``exc``."""
    for item in _chain(exc):
        if _no_space(item) and isinstance(item, OSError):
            return f"{type(item).__name__}: {item}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else 'no message'}"


class OneLineErrors(logging.Filter):
    """A log filter: an error record keeps its message and the error's one line, without the
    traceback (with ``every_error=False``, only errors of a lost connection or a full disk);
    while the server is known lost, Prefect's records are dropped (the watch said what
    happens)."""

    def __init__(self, every_error: bool = False) -> None:
        super().__init__()
        self.every_error = every_error

    def filter(self, record: logging.LogRecord) -> bool:
        if _lost.is_set() and record.name.startswith(("prefect", "asyncio")):
            return False
        if record.name.endswith("state_proposer") and "Aborted submission" in str(record.msg):
            return False  # a run due while one runs: dropped by the server, nothing to say
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and (self.every_error or is_connection_error(exc)
                                or _no_space(exc)):
            text = record.getMessage()
            record.msg = text if str(exc)[:60] in text else f"{text} ({describe(exc)})"
            record.args = ()
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def install_one_line_errors(every_error: bool = False) -> None:
    """Put :class:`OneLineErrors` on every log handler there is (Prefect's included), unless
    ``FASTMICE_DEBUG`` is set."""
    if os.environ.get("FASTMICE_DEBUG"):
        return
    loggers = [logging.getLogger(), *(logging.getLogger(name)
                                      for name in list(logging.root.manager.loggerDict))]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if not any(isinstance(f, OneLineErrors) for f in handler.filters):
                handler.addFilter(OneLineErrors(every_error))


class OneLineTracebacks:
    """A text stream that writes a traceback (the output of the flow runs' processes, which
    Prefect's runner copies to this process's ``sys.stdout`` and ``sys.stderr``) as one line:
    its last, the error."""

    _STARTS = ("Traceback (most recent call last):", "Exception Group Traceback")
    _LINKS = ("During handling of the above exception", "The above exception was the direct")

    def __init__(self, stream: Any) -> None:
        self._stream, self._partial, self._inside, self._after = stream, "", False, False

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._line(line)
        return len(text)

    def _line(self, line: str) -> None:
        after, self._after = self._after, False
        if any(start in line for start in self._STARTS) or line.startswith(self._LINKS):
            self._inside = True
        elif after and not line.strip():
            self._after = True  # between two chained errors
        elif self._inside and (not line or line[0] in " \t|+^~"):
            pass
        elif self._inside and line[:2].isdigit() and line[2:3] == ":":  # a log line
            self._inside = False
            self._stream.write(f"    (a traceback left out)\n{line}\n")
        elif self._inside:
            self._inside, self._after = False, True
            self._stream.write(f"    ({line.strip()}; traceback left out)\n")
        else:
            self._stream.write(line + "\n")

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{parent}/task").iterdir():
                children = [int(c) for c in (task / "children").read_text().split()]
                found.extend(children)
                todo.extend(children)
    return found


def _processes_served_by(pid: int) -> list[int]:
    """Processes whose environment says serve process ``pid`` started them."""
    marker = f"FASTMICE_SERVED_BY={pid}".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if int(proc.name) != os.getpid() and marker in (proc / "environ").read_bytes(
                    ).split(b"\0"):
                found.append(int(proc.name))
    return found


def stop_runs_in_flight() -> int:
    """SIGKILL the processes this serve process started (its flow runs); how many."""
    pids = set(_descendants(os.getpid())) | set(_processes_served_by(os.getpid()))
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)


def _restart() -> None:
    """Replace this process with the same command (a fresh runner)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def _listening(url: str) -> bool:
    """Whether something accepts connections at ``url``'s host and port (a busy server
    that is slow to answer its health check still does)."""
    parts = urllib.parse.urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port or 80), timeout=3).close()
    except OSError:
        return False
    return True


def _watch(url: str, grace: float, poll: float) -> None:
    """The watch thread: on a lost server, stop the runs, wait for it, restart or exit. Lost
    is: nothing listening for :data:`LOST_AFTER` s, or no health answer for ``BUSY_LOST_AFTER``
    s (a server busy with SQLite's locks may be slow; its runs are not stopped for that)."""
    silent_since: float | None = None
    while True:
        time.sleep(poll)
        if api_answers(url):
            silent_since = None
            continue
        now = time.monotonic()
        silent_since = now if silent_since is None else silent_since
        patience = BUSY_LOST_AFTER if _listening(url) else LOST_AFTER
        if now - silent_since < patience:
            continue
        _lost.set()
        stopped = stop_runs_in_flight()
        _say(f"lost the Prefect server at {url} (no answer for {now - silent_since:.0f} s); "
             f"{stopped} run process(es) stopped; waiting up to {grace:.0f} s for it")
        if _wait_for(url, grace):
            _say(f"the Prefect server at {url} answers again: serving anew")
            _restart()
        _say(f"the Prefect server at {url} has not answered for {grace:.0f} s: stopped "
             f"(start the server again, then serve again)")
        os._exit(EXIT_LOST)


def _process_alive_for(run_id: str) -> bool:
    marker = f"PREFECT__FLOW_RUN_ID={run_id}".encode()
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if marker in (proc / "environ").read_bytes().split(b"\0"):
                return True
    return False


async def _crash_orphaned_runs(deployment_names: list[str]) -> list[str]:
    """Mark Crashed the Running or Pending runs of the deployments that no process runs."""
    from prefect import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.exceptions import ObjectNotFound
    from prefect.states import Crashed

    crashed = []
    async with get_client() as client:
        ids = []
        for name in deployment_names:
            with contextlib.suppress(ObjectNotFound):
                ids.append((await client.read_deployment_by_name(name)).id)
        if not ids:
            return crashed
        runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
            deployment_id=FlowRunFilterDeploymentId(any_=ids),
            state=FlowRunFilterState(type=FlowRunFilterStateType(
                any_=[StateType.RUNNING, StateType.PENDING]))))
        for run in runs:
            if _process_alive_for(str(run.id)):
                continue  # a run of a killed serve process that still works: let it finish
            await client.set_flow_run_state(run.id, Crashed(
                message="its process is gone (the serve process or the server stopped while "
                        "it ran); the next run takes its batches"))
            crashed.append(run.name)
    return crashed


def serve_supervised(build: Callable[[], list[Any]], deployment_names: list[str], url: str,
                     grace: float = 300.0, poll: float = 2.0) -> int:
    """Serve the deployments ``build()`` returns until interrupted; the exit status.

    Parameters
    ----------
    build : callable
        Returns the ``RunnerDeployment`` objects to serve (called once the API answers).
    deployment_names : list of str
        Their ``<flow name>/<deployment name>``, for the runs left by a killed process.
    url : str
        The Prefect API (``PREFECT_API_URL``).
    grace : float, default=300
        Seconds to wait for a server that does not answer (at start, or once lost).
    poll : float, default=2
        Seconds between two health checks of the watch.

    Returns
    -------
    status : int
        0 when stopped (Ctrl-C, SIGTERM), 1 on another error, :data:`EXIT_LOST` (3) when
        the server did not answer within ``grace`` seconds; each said in one line.
    """
    from prefect import serve

    os.environ.setdefault("FASTMICE_SERVED_BY", str(os.getpid()))
    if not api_answers(url):
        _say(f"waiting up to {grace:.0f} s for the Prefect server at {url}")
        if not _wait_for(url, grace):
            _say(f"the Prefect server at {url} gave no answer within {grace:.0f} s: start it "
                 f"(infra/local_server.sh) or set PREFECT_API_URL to a running server")
            return EXIT_LOST
    install_one_line_errors(every_error=True)
    if not os.environ.get("FASTMICE_DEBUG"):
        sys.stdout, sys.stderr = OneLineTracebacks(sys.stdout), OneLineTracebacks(sys.stderr)
    threading.excepthook = lambda args: _say(f"{args.thread.name}: {describe(args.exc_value)}")
    threading.Thread(target=_watch, args=(url, grace, poll), name="fastmice-serve-watch",
                     daemon=True).start()
    atexit.register(stop_runs_in_flight)
    try:
        crashed = asyncio.run(_crash_orphaned_runs(deployment_names))
        if crashed:
            _say(f"marked Crashed {len(crashed)} run(s) left by a stopped process: "
                 f"{', '.join(crashed)}")
        serve(*build())
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        if not is_connection_error(exc):
            _say(f"stopped: {describe(exc)}")
            return 1
        _say(f"lost the connection to the Prefect server at {url} ({describe(exc)})")
        time.sleep(LOST_AFTER + 2 * poll)  # the watch acts if the server is gone ...
        if not _lost.is_set():
            _say("the server answers: serving anew")  # ... else a connection was dropped
            _restart()
        threading.Event().wait()  # the watch restarts this process or ends it
    _say("stopped")
    return 0
