"""The serve process's fault handling in pieces (:mod:`flows.serving`): tracebacks and
connection errors kept to one line, and a serve process whose server never answers stopping
in one line with status 3. The whole, through real faults: tests/reliability's soak test."""

from __future__ import annotations

import errno
import io
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from flows.serving import EXIT_LOST, OneLineErrors, OneLineTracebacks, is_connection_error

ROOT = Path(__file__).resolve().parents[2]

TRACEBACK = """12:00:01.000 | INFO    | Flow run 'x' - Beginning flow run
Traceback (most recent call last):
  File "a.py", line 1, in <module>
    raise OSError("inner")
OSError: inner

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "b.py", line 2, in <module>
    ^^^^^^
httpx.ConnectError: All connection attempts failed
12:00:02.000 | INFO    | Flow run 'x' - Finished in state Crashed()
"""


def test_a_traceback_written_by_a_run_becomes_one_line_per_error():
    out = io.StringIO()
    stream = OneLineTracebacks(out)
    for piece in (TRACEBACK[:50], TRACEBACK[50:333], TRACEBACK[333:]):  # any chunking
        stream.write(piece)
    lines = out.getvalue().splitlines()
    assert "Traceback" not in out.getvalue() and "File " not in out.getvalue()
    assert lines == ["12:00:01.000 | INFO    | Flow run 'x' - Beginning flow run",
                     "    (OSError: inner; traceback left out)",
                     "    (httpx.ConnectError: All connection attempts failed; traceback left out)",
                     "12:00:02.000 | INFO    | Flow run 'x' - Finished in state Crashed()"]


def _record(exc: BaseException) -> logging.LogRecord:
    try:
        raise exc
    except BaseException:
        return logging.LogRecord("prefect.runner", logging.ERROR, __file__, 1,
                                 "polling failed", (), sys.exc_info())


class ConnectError(Exception):
    """Named as httpx's."""


def test_log_records_of_a_lost_connection_or_a_full_disk_lose_their_traceback():
    wrapped = RuntimeError("Service exceeded error threshold.")
    wrapped.__context__ = ConnectError("All connection attempts failed")
    assert is_connection_error(wrapped) and is_connection_error(ConnectionRefusedError())
    assert not is_connection_error(ValueError("bad k"))
    for exc in (wrapped, OSError(errno.ENOSPC, "No space left on device")):
        record = _record(exc)
        assert OneLineErrors().filter(record) and record.exc_info is None
        assert str(exc) in record.getMessage()
    other = _record(ValueError("bad k"))
    OneLineErrors().filter(other)
    assert other.exc_info is not None  # kept: only the serve process drops every traceback
    every = _record(ValueError("bad k"))
    OneLineErrors(every_error=True).filter(every)
    assert every.exc_info is None and "ValueError: bad k" in every.getMessage()


def test_serve_without_a_server_stops_in_one_line_with_status_3(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "FASTMICE_"))}
    env.update(PREFECT_API_URL=f"http://127.0.0.1:{port}/api", PREFECT_HOME=str(tmp_path / "h"),
               PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "cli.serve", "--inbox", str(tmp_path / "inbox"), "--dataset",
         "d", "--k", "3", "--store", str(tmp_path / "store"), "--grace", "2"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode == EXIT_LOST, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert lines == [f"fastmice serve: waiting up to 2 s for the Prefect server at "
                     f"http://127.0.0.1:{port}/api",
                     f"fastmice serve: the Prefect server at http://127.0.0.1:{port}/api gave no "
                     f"answer within 2 s: start it (infra/local_server.sh) or set PREFECT_API_URL "
                     f"to a running server"], lines


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch):
    monkeypatch.delenv("FASTMICE_DEBUG", raising=False)
