"""A stored answer on an S3-compatible store against the same answer on a local store: the
commands' wall times, alternated in one session, and every request the S3 answer makes.

    python benchmarks/s3_requests.py [DATA] [--repeats 5] [--runs 1]

Starts moto's S3 server (``infra/s3_local.sh``, a free port) and, as ``pipeline_cost.py
--ratios`` does, a session of commands in a Prefect home of its own (the first command starts
the shared API server and the warm process; no ``PREFECT_API_URL``). ``fastmice cluster DATA``
computes once into a local store and once into an ``s3://`` store (``--runs N``: N runs of
it in each, the later ones with ``--run-name``, to show that the answer does not grow with
the runs kept); then the same command, whose every step is stored, runs ``--repeats`` times
against each store, alternating. Last, the S3 answer runs once in this process with every
request s3fs makes recorded (``_call_s3``: the operation, the object or prefix, the
milliseconds and fastmice's code that asked) and the client's set-up. DATA defaults to
``../shared/datasets/Hdigit.npz``. Prints JSON on stdout, the requests on stderr.
"""

from __future__ import annotations

import argparse
import contextvars
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from _measure import run_measured, start_local_s3, work_folder

REPO = Path(__file__).resolve().parents[1]
HDIGIT = REPO.parent / "shared" / "datasets" / "Hdigit.npz"
_CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="")


def _caller() -> str:
    """Where fastmice's code asked: its innermost frame outside ``storage/``, and inside."""
    frames = [f for f in traceback.extract_stack()[:-2]
              if f.filename.startswith(str(REPO)) and "/.venv/" not in f.filename
              and "/benchmarks/" not in f.filename]
    outside = [f for f in frames if "/storage/" not in f.filename][-1:]
    inside = [f for f in frames if "/storage/" in f.filename][-1:]
    return " > ".join(f"{Path(f.filename).relative_to(REPO)}:{f.lineno} {f.name}"
                      for f in outside + inside)


class Trace:
    """Records s3fs's requests and client set-ups while installed."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def install(self) -> None:
        import s3fs

        call, setup = s3fs.S3FileSystem._call_s3, s3fs.S3FileSystem.set_session
        trace, started0 = self, time.perf_counter()

        async def traced_call(fs: Any, method: str, *args: Any, **kwargs: Any) -> Any:
            caller, started = _CALLER.get(), time.perf_counter()
            try:
                return await call(fs, method, *args, **kwargs)
            finally:
                trace.calls.append({
                    "op": method, "what": kwargs.get("Key") or kwargs.get("Prefix") or "",
                    "start_ms": 1000 * (started - started0),
                    "ms": 1000 * (time.perf_counter() - started), "caller": caller})

        async def traced_setup(fs: Any, *args: Any, **kwargs: Any) -> Any:
            fresh, started = getattr(fs, "_s3", None) is None, time.perf_counter()
            try:
                return await setup(fs, *args, **kwargs)
            finally:
                if fresh:
                    trace.calls.append({"op": "(client set-up)", "what": "",
                                        "start_ms": 1000 * (started - started0),
                                        "ms": 1000 * (time.perf_counter() - started),
                                        "caller": _CALLER.get()})

        s3fs.S3FileSystem._call_s3 = traced_call
        s3fs.S3FileSystem.set_session = traced_setup
        asyn = sys.modules["fsspec.asyn"]
        sync = asyn.sync

        def traced_sync(loop: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
            caller = _caller()  # the requests run in fsspec's loop thread: who asked is here

            async def asking(*a: Any, **k: Any) -> Any:
                _CALLER.set(caller)
                return await func(*a, **k)

            return sync(loop, asking, *args, **kwargs)

        asyn.sync = traced_sync


def _in_process(args: list[str]) -> tuple[float, dict[str, Any]]:
    """``fastmice ARGS --json`` in this process (as a new command: s3fs's instances are
    forgotten): seconds and its summary."""
    import s3fs

    from cli.main import main

    s3fs.S3FileSystem.clear_instance_cache()
    with tempfile.TemporaryFile() as out:  # the command writes its result on fd 1
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(out.fileno(), 1)
        try:
            started = time.perf_counter()
            status = main([*args, "--json"])
            seconds = time.perf_counter() - started
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        text = out.read().decode()
    if status != 0:
        raise RuntimeError(f"{args}: status {status}")
    return seconds, json.loads(text)


def _trace(command: list[str], url: str, s3: dict[str, str]) -> tuple[float, list[dict]]:
    """The S3 answer in this process (botocore's data loaded first, as the warm process
    does): its seconds and requests."""
    os.environ.update(s3)
    for name in [n for n in os.environ if n.startswith("PREFECT_")]:
        del os.environ[name]
    sys.path.insert(0, str(REPO))
    try:
        from storage import warm_s3
    except ImportError:  # a checkout from before it
        pass
    else:
        warm_s3()
    trace = Trace()
    trace.install()
    _in_process([*command, "--store", url])  # imports on the way
    trace.calls.clear()
    seconds, summary = _in_process([*command, "--store", url])
    assert summary.get("answered_from_store"), summary
    return seconds, list(trace.calls)


def measure(data: Path, repeats: int, runs: int, keep: bool = False) -> dict[str, Any]:
    """The session (see the module docstring) in a work folder of its own (removed unless
    ``keep``); its figures."""
    with work_folder("fastmice-s3-requests-", keep) as work:
        return _session(work, data, repeats, runs)


def _session(work: Path, data: Path, repeats: int, runs: int) -> dict[str, Any]:
    logs = work / "logs"
    logs.mkdir()
    s3 = start_local_s3(work)
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PREFECT_") and k != "FASTMICE_STORE"}
        env.update(s3, FASTMICE_PREFECT_HOME=str(work / "own-home"), FASTMICE_API_IDLE="120",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                            env.get("PYTHONPATH")])))
        stores = {"local": str(work / "store"), "s3": "s3://fastmice/requests"}
        command = ["cluster", str(data), "--name", "bench"]
        count = iter(range(1000))

        def run(args: list[str]) -> Any:
            m = run_measured(f"{next(count):02d}-{args[0]}",
                             [sys.executable, "-m", "cli", *args, "--json"], env, logs, 1800)
            if m.returncode != 0:
                raise RuntimeError(f"{args}: status {m.returncode}; see {m.log}")
            return m

        first = {}
        for name, store in stores.items():
            for r in range(runs):
                named = ["--run-name", f"bench-{r}"] if r < runs - 1 else []
                first[name] = run([*command, "--store", store, *named]).seconds
        sys.path.insert(0, str(REPO))
        from cli.launch import wait_for_warm_process

        warm = wait_for_warm_process(env)
        seconds: dict[str, list[float]] = {"local": [], "s3": []}
        for _ in range(repeats):
            for name, store in stores.items():
                m = run([*command, "--store", store])
                assert m.output.get("answered_from_store"), m.output
                seconds[name].append(m.seconds)
        in_process_s, calls = _trace(command, stores["s3"], s3)
    finally:
        subprocess.run(["bash", str(REPO / "infra" / "s3_local.sh"), "stop", "--dir",
                        str(work / "s3")], check=False, capture_output=True)
    local, remote = statistics.median(seconds["local"]), statistics.median(seconds["s3"])
    requests = [c for c in calls if not c["op"].startswith("(")]
    return {
        "data": str(data), "runs_kept": runs, "load": os.getloadavg()[0],
        "warm_process": warm, "work": str(work), "first_cluster_s": first,
        "local_stored_s": local, "s3_stored_s": remote, "s3_vs_local": remote / local,
        "bar_s3_le_2x_local": remote <= 2 * local, "all_s": seconds,
        "s3_in_process_s": in_process_s, "requests": len(requests),
        "requests_ms": sum(c["ms"] for c in requests), "calls": calls,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=HDIGIT)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    report = measure(args.data.resolve(), args.repeats, args.runs, args.keep)
    for c in report["calls"]:
        print(f"{c['start_ms']:8.1f} +{c['ms']:6.1f} ms  {c['op']:<16} {c['what'][-56:]:<56} "
              f"{c['caller']}", file=sys.stderr)
    del report["calls"]
    print(json.dumps(report, indent=2))
    return 0 if report["bar_s3_le_2x_local"] else 1


if __name__ == "__main__":
    sys.exit(main())
