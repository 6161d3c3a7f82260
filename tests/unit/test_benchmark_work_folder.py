"""A benchmark's work folder: removed at the end with the shared API servers it started
(they would load the next benchmark, and a session at scale leaves ~10 GB)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmark_loader import load_benchmark

from storage.locks import owner_alive, process_identity


def _fake_server(work):
    """A process in a session of its own, registered as the shared server of a Prefect home
    in ``work``, and one standing for its idle watch (named by its folder)."""
    folder = work / "own-home" / "fastmice-api" / "shared"
    folder.mkdir(parents=True)
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              start_new_session=True)
    watch = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                              "processes.api_idle", str(folder)], start_new_session=True)
    (folder / "shared.json").write_text(json.dumps({"server": process_identity(server.pid)}))
    cmdline = Path(f"/proc/{watch.pid}/cmdline")
    while b"processes.api_idle" not in cmdline.read_bytes():  # started, as a real watch has
        time.sleep(0.01)
    return server, watch


def test_the_work_folder_goes_with_the_servers_it_started():
    measure = load_benchmark("_measure")
    with measure.work_folder("fastmice-test-") as work:
        server, watch = _fake_server(work)
        identities = [process_identity(p.pid) for p in (server, watch)]
    assert server.wait(10) is not None and watch.wait(10) is not None
    assert not any(owner_alive(i) for i in identities)
    assert not work.exists()


def test_a_kept_work_folder_stays_but_its_servers_stop():
    measure = load_benchmark("_measure")
    with measure.work_folder("fastmice-test-", keep=True) as work:
        server, watch = _fake_server(work)
        (work / "result.json").write_text("{}")
    try:
        assert server.wait(10) is not None and watch.wait(10) is not None
        assert (work / "result.json").exists()
    finally:
        shutil.rmtree(work, ignore_errors=True)
