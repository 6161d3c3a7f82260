"""Prefect, started and run from the command line: settings, the embedded API, the flows.

Nothing here imports Prefect until a command that runs a flow calls it, so ``fastmice runs``,
``show`` and ``append`` never load it.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

from processes.embedded_api import reap_stale_servers
from processes.errors import ProcessError
from processes.prefect_home import api_configured, choose_prefect_home, shares_server

__all__ = ["FlowRunner", "check_dask", "configure_environment", "joined_shared_server",
           "run_flow", "start_embedded_api"]


def configure_environment(verbose: bool) -> None:
    """Quiet, robust defaults for Prefect and Dask, and Prefect's home (set before they are
    imported)."""
    global _own_home
    # A Prefect home of fastmice's own unless the user chose one.
    _own_home = choose_prefect_home() is not None
    level = "INFO" if verbose else "CRITICAL"
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_TASK_RUNS_LEVEL", level)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # The embedded API server starts in a subprocess; 20 s is tight on a loaded machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "info" if verbose else "error")


def check_dask(address: str | None) -> None:
    """Fail early (before anything is written) if the Dask option cannot work."""
    if address is None:
        return
    try:
        import prefect_dask  # noqa: F401
    except ImportError:
        raise ProcessError('--dask needs prefect-dask: pip install -e ".[dask]"') from None
    if address == "local":
        return
    match = re.fullmatch(r"(?:tcp://)?\[?([^\]/]+?)\]?:(\d+)", address)
    if not match:
        raise ProcessError(f"--dask {address!r}: expected 'local' or a scheduler address "
                           f"such as tcp://127.0.0.1:8786.")
    try:
        socket.create_connection((match[1], int(match[2])), timeout=5).close()
    except OSError as exc:
        raise ProcessError(f"--dask {address}: cannot reach the Dask scheduler "
                           f"({exc.strerror or exc}).") from None


_api_start: threading.Thread | None = None
_api_failure: list[BaseException] = []
_own_home = False
_joined_shared = False


def joined_shared_server() -> bool:
    """Whether this command joined (or started) the shared local API server."""
    return _joined_shared


def shared_api() -> bool:
    """Whether commands share one local API server (:mod:`processes.shared_api`):
    ``FASTMICE_SHARED_API`` (1 or 0), by default only in fastmice's own Prefect home."""
    return shares_server(_own_home)


def start_embedded_api() -> None:
    """Start Prefect's API server now, in the background, if no server is set.

    The server takes seconds to be ready; started while the data are copied into the
    store, it is ready sooner. :func:`run_flow` waits for it and reports, in one line, a
    server that could not start (:mod:`processes.api_server`). A SQLite database that this
    Prefect cannot open is refused here, before anything is written.

    * Shared (:func:`shared_api`): the local server that commands share is joined, or
      started, before Prefect is imported, and ``PREFECT_API_URL`` points at it
      (:mod:`processes.shared_api`); it stops itself when idle.
    * Otherwise the command's own embedded server, which lives no longer than the command,
      however it ends (:mod:`processes.embedded_api`); a server left by an earlier command is
      stopped first.
    """
    global _api_start
    if _api_start is not None or api_configured():
        return  # started, or a server is set: no need to import the server's code (~2.5 s)
    if shared_api():
        from processes.api_server import check_database, check_port
        from processes.shared_api import database_home, join_shared_server

        home = os.environ.get("PREFECT_HOME") or os.path.expanduser("~/.prefect")
        check_database(database_home(home))  # one database per key (processes.shared_api)
        check_port()
        timeout = float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", 120))

        def join() -> None:  # Prefect is imported only after this, by run_flow
            global _joined_shared
            os.environ["PREFECT_API_URL"] = join_shared_server(home, timeout)
            _joined_shared = True

        _start_in_background(join)
        return
    from prefect.settings import (
        PREFECT_HOME,
        PREFECT_SERVER_EPHEMERAL_ENABLED,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    )

    if not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return
    from processes.api_server import check_database, check_port, start_server

    home = str(PREFECT_HOME.value())
    check_database(home)  # before the server's code is imported (seconds on a busy machine)
    check_port()
    # Imported here, in the main thread: importing prefect from two threads at once can
    # hand one of them a partially initialised module.
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the instance Prefect's client will use too
    timeout = float(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())

    def start() -> None:
        with contextlib.suppress(OSError):
            reap_stale_servers(home)
        start_server(server, home, timeout)

    _start_in_background(start)


def _start_in_background(start: Any) -> None:
    """Run ``start()`` in a thread; :func:`wait_for_api` joins it and raises its failure."""
    global _api_start

    def guarded() -> None:
        try:
            start()
        except BaseException as exc:
            _api_failure.append(exc)

    _api_start = threading.Thread(target=guarded, name="fastmice-api-start", daemon=True)
    _api_start.start()


def wait_for_api() -> None:
    """Wait until the server :func:`start_embedded_api` started answers; raise its failure."""
    if _api_start is not None:
        _api_start.join()  # the flow must not find a server that is started but not ready
    if _api_failure:
        raise _api_failure[0]


def run_flow(flow_name: str, progress: Callable[[Any], None] | None, n_jobs: int | None,
             dask: str | None, **parameters: Any) -> dict[str, Any]:
    """Run one of the pipeline's flows in this process on :func:`flows.runners.task_runner`
    ``(n_jobs, dask)``; ``progress`` (if given) is called with each
    :class:`pipeline.progress.RunProgress` snapshot (:func:`pipeline.progress.listen`)."""
    prefect_loaded = "prefect.context" in sys.modules  # in a warm process (processes.warm)
    start_embedded_api()  # if the command has not started it yet
    wait_for_api()
    if prefect_loaded:  # imported before this command set its variables: read them again
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
    from flows import pipeline
    from flows.runners import task_runner
    from pipeline.progress import listen

    flow = getattr(pipeline, flow_name).with_options(task_runner=task_runner(n_jobs, dask))
    with listen(progress or (lambda *a: None)), _without_heartbeats(_own_home):
        return flow(n_jobs=n_jobs, **parameters)


def _without_heartbeats(own_home: bool) -> contextlib.AbstractContextManager[Any]:
    """In fastmice's own Prefect home, flow runs send no heartbeats: they feed Prefect's
    detection of crashed runs, which an automation of the user's server would act on, and
    nothing reads them there; ending the heartbeat thread cost each flow run up to 1 s (it
    sleeps in steps of a second). A server or home the user chose keeps Prefect's default."""
    if not own_home:
        return contextlib.nullcontext()
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    return temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})


class FlowRunner:
    """Runs the pipeline's flows in this process for :mod:`pipeline.commands`
    (:class:`pipeline.commands.cluster.FlowRunner`): on Dask at ``dask`` if given, its
    progress drawn by the listener ``progress()`` makes (none if it makes none)."""

    def __init__(self, dask: str | None = None,
                 progress: Callable[[], Callable[[Any], None] | None] | None = None) -> None:
        self.dask = dask
        self.progress = progress

    @property
    def records_runs(self) -> bool:
        """Whether a Prefect server is set: every run is then a flow run it records."""
        return api_configured()

    def check(self) -> None:
        """Fail before anything is written if the Dask option cannot work."""
        check_dask(self.dask)

    def start(self) -> None:
        """Start Prefect's API server in the background (:func:`start_embedded_api`)."""
        start_embedded_api()

    def run(self, flow_name: str, n_jobs: int | None, **parameters: Any) -> dict[str, Any]:
        """Run flow ``flow_name`` (:func:`run_flow`); its summary."""
        listener = self.progress() if self.progress is not None else None
        return run_flow(flow_name, listener, n_jobs, self.dask, **parameters)
