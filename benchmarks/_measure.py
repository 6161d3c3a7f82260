"""Timing a command in a subprocess: wall seconds, exit code, peak RSS, its JSON output.

A helper of ``benchmarks/pipeline_cost.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Measurement", "run_measured", "work_folder"]

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Measurement:
    """One timed subprocess: wall seconds, exit code, peak RSS and its parsed JSON output."""

    label: str
    command: list[str]
    seconds: float
    returncode: int
    peak_rss_mb: float
    tree_rss_mb: float | None = None
    cpu_seconds: float = float("nan")
    output: Any = None
    log: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _parse_json(text: str) -> Any:
    """The one JSON object ``fastmice --json`` prints on stdout (``None`` if it printed none)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _tree_rss_sampler(pid: int, stop: threading.Event, peak: list[float]) -> None:
    """Sample the summed RSS of ``pid`` and its descendants every 0.2 s (needs psutil)."""
    import psutil

    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.is_set():
        try:
            procs = [root, *root.children(recursive=True)]
            total = 0
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
            peak[0] = max(peak[0], total / 2**20)
        except psutil.Error:
            return
        stop.wait(0.2)


#: Runs the command as its own child and writes that child's peak RSS (KiB) and its CPU seconds
#: (user + system, its own and those of the processes it waited for: the worker processes
#: of a Dask LocalCluster, the embedded API) to a file. A
#: process's ru_maxrss starts at its parent's resident size when it is forked (Linux keeps
#: the high-water mark across exec), so the command must be forked by a small process, not by
#: a benchmark that may hold gigabytes of generated data.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(
    label: str, command: list[str], env: dict[str, str], log_dir: Path, timeout: float
) -> Measurement:
    """Run ``command`` from the repository root; time it and record its peak RSS."""
    log = log_dir / f"{label}.log"
    out = log_dir / f"{label}.out"
    try:
        import psutil  # noqa: F401  (optional: tree RSS)

        have_psutil = True
    except ImportError:
        have_psutil = False
    with out.open("wb") as fout, log.open("wb") as ferr:
        start = time.perf_counter()
        rss_file = log_dir / f"{label}.rss"
        rss_file.unlink(missing_ok=True)
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(rss_file), *command], cwd=REPO, env=env,
            stdout=fout, stderr=ferr, start_new_session=True
        )
        stop = threading.Event()
        peak = [0.0]
        sampler = None
        if have_psutil:
            sampler = threading.Thread(
                target=_tree_rss_sampler, args=(proc.pid, stop, peak), daemon=True
            )
            sampler.start()
        timer = threading.Timer(timeout, _kill_group, args=(proc.pid,))
        timer.start()
        try:
            _, status, _ = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            stop.set()
            _kill_group(proc.pid)  # leftovers (e.g. a stuck API server) after the command exits
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if sampler is not None:
            sampler.join()
    return Measurement(
        label=label,
        command=command,
        seconds=seconds,
        returncode=proc.returncode,
        peak_rss_mb=_launcher_figures(rss_file)[0] / 1024,
        cpu_seconds=_launcher_figures(rss_file)[1],
        tree_rss_mb=peak[0] if have_psutil else None,
        output=_parse_json(out.read_text(errors="replace")),
        log=str(log),
    )


def _launcher_figures(rss_file: Path) -> tuple[float, float]:
    """What the launcher wrote: peak RSS (KiB on Linux) and CPU seconds, NaN if it was
    killed first."""
    try:
        rss, cpu = rss_file.read_text().split()
        return float(rss), float(cpu)
    except (OSError, ValueError):
        return float("nan"), float("nan")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def start_local_s3(work: Path) -> dict[str, str]:
    """Start ``infra/s3_local.sh``'s S3-compatible server on a free port, its objects under
    ``work/s3``; the environment a command needs to reach it (stop it with the script's
    ``stop --dir work/s3``)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(["bash", str(REPO / "infra" / "s3_local.sh"), "start", "--port", str(port),
                    "--dir", str(work / "s3")], check=True, capture_output=True)
    return {"AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"}


@contextlib.contextmanager
def work_folder(prefix: str, keep: bool = False) -> Iterator[Path]:
    """A new temporary folder for a benchmark's data, stores, Prefect home and logs, removed
    at the end unless ``keep`` (a session at scale leaves ~10 GB). The shared API servers of
    the Prefect homes in it are stopped at the end (their warm processes follow), so that
    they do not load the next benchmark."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        _stop_shared_servers(work)
        if keep:
            print(f"kept the work folder {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

def _stop_shared_servers(work: Path) -> None:
    """Stop each shared API server registered under ``work`` (``processes.shared_api``'s
    ``shared.json``) and their idle watches (which would write their lock file again), as
    the idle watch stops a server (``processes.embedded_api._stop``: SIGTERM, then SIGKILL)."""
    sys.path.insert(0, str(REPO))
    from processes.embedded_api import _stop
    from storage.locks import process_identity

    for registered in work.glob("**/fastmice-api/shared/**/shared.json"):  # a folder per key
        with contextlib.suppress(OSError, ValueError, KeyError):
            _stop(json.loads(registered.read_text())["server"])
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            args = cmdline.read_bytes().split(b"\0")
            if b"processes.api_idle" in args and any(str(work).encode() in a for a in args):
                _stop(process_identity(int(cmdline.parent.name)))
