"""``fastmice daemon status|stop``: list or stop the processes fastmice leaves running for
later commands (the shared Prefect API server, the warm processes: :mod:`processes.daemons`).

Nothing here imports Prefect; :mod:`cli.launch` runs ``daemon`` through :func:`main`
without the rest of the command line's imports.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli.output import Output
from processes.daemons import daemons, stop_daemon
from processes.prefect_home import server_key

__all__ = ["add_parsers", "cmd_daemon", "main", "say_left_running"]


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _where(info: dict[str, Any]) -> str:
    if info["kind"] == "server":
        return f"http://127.0.0.1:{info['port']}/api  (home {Path(info['folder']).parents[2]})"
    return f"{info['python']}  (socket {info['socket']})"


def _status_text(found: list[dict[str, Any]]) -> str:
    if not found:
        return ("nothing left running: no shared Prefect API server and no warm process of "
                "this user\n")
    lines = [f"{'kind':<7}{'pid':>8}  {'key':<28}{'RSS':>8}  {'age':>7}  {'idle':>7}  "
             f"{'stops in':>8}  where"]
    for d in found:
        rss = f"{d['rss_mb']:.0f} MB" if d["rss_mb"] is not None else "?"
        lines.append(f"{d['kind']:<7}{d['pid']:>8}  {d['key']:<28}{rss:>8}  "
                     f"{_duration(d['age_s']):>7}  {_duration(d['idle_s']):>7}  "
                     f"{_duration(d['stops_in_s']):>8}  {_where(d)}")
    total = sum(d["rss_mb"] or 0 for d in found)
    lines.append(f"{len(found)} process(es), {total:.0f} MB resident; each stops after its idle "
                 f"time without a command; `fastmice daemon stop` stops them now")
    return "\n".join(lines) + "\n"


def cmd_daemon(args: argparse.Namespace, output: Output) -> None:
    """``status``: list this user's processes left running; ``stop``: stop them."""
    found = daemons()
    rows = [{k: d[k] for k in ("kind", "pid", "key", "rss_mb", "age_s", "idle_s",
                                "stops_in_s")} for d in found]
    if args.action == "status":
        output.result({"daemons": rows}, _status_text(found))
        return
    for d in sorted(found, key=lambda d: d["kind"] != "warm"):  # warm processes first
        stop_daemon(d)
    names = {"server": "shared Prefect API server", "warm": "warm process"}
    text = "".join(f"stopped the {names[d['kind']]} {d['pid']} ({d['key']}, "
                   f"{d['rss_mb'] or 0:.0f} MB)\n" for d in found)
    output.result({"stopped": rows}, text or "nothing to stop\n")


def main(argv: list[str]) -> int:
    """``fastmice daemon ARGS`` without the rest of the command line's imports (~0.7 s, not
    ~5 s on a busy machine: :mod:`cli.launch` calls it); the exit status."""
    parser = argparse.ArgumentParser(prog="fastmice")
    add_parsers(parser.add_subparsers(dest="command", required=True), None)
    try:
        args = parser.parse_args(["daemon", *argv])
    except SystemExit as exc:  # a usage error: the status of every error, as cli.main's
        return 1 if exc.code else 0
    output = Output(args.json)
    try:
        cmd_daemon(args, output)
    except (OSError, TimeoutError) as exc:
        print(f"fastmice daemon: error: {exc}", file=sys.stderr)
        return 1
    return 0


def add_parsers(sub: argparse._SubParsersAction,
                      finish: Callable[..., None] | None) -> None:
    """Declare ``fastmice daemon status|stop`` (``finish`` is not needed: no store)."""
    p = sub.add_parser(
        "daemon", help="show or stop the processes kept for later commands",
        description="The shared Prefect API server and the warm processes that fastmice "
                    "leaves running for later commands (they stop by themselves after "
                    "FASTMICE_API_IDLE seconds without a command, 600 by default): `status` "
                    "lists this user's with their key, memory, age and idle timer; `stop` "
                    "stops them now. FASTMICE_SHARED_API=0 and FASTMICE_WARM=0 keep them "
                    "from starting.")
    p.add_argument("action", choices=("status", "stop"))
    p.add_argument("--json", action="store_true",
                   help="print exactly one JSON object on stdout")
    p.add_argument("--verbose", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_daemon, store=None)


def say_left_running(server_pid: int | None, warm_pid: int | None, idle: float) -> None:
    """After a command: one line on stderr if it started a shared server (``server_pid``) or
    a warm process (``warm_pid``), which stop after ``idle`` seconds without a command."""
    parts = []
    if server_pid is not None:
        parts.append(f"a shared Prefect API server (pid {server_pid})")
    if warm_pid is not None:
        parts.append(f"a warm process (pid {warm_pid}; FASTMICE_WARM=0: none)")
    if parts:
        print(f"fastmice: left running for later commands: {' and '.join(parts)}, "
              f"{server_key()}; {'they stop' if len(parts) > 1 else 'it stops'} after "
              f"{idle:.0f} s without a command (FASTMICE_API_IDLE); `fastmice daemon status` "
              f"lists them, `fastmice daemon stop` stops them", file=sys.stderr)
