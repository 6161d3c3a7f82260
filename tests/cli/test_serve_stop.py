"""``infra/serve.sh stop`` and ``infra/local_server.sh stop`` also stop the processes of runs
that a serve process killed with SIGKILL left behind (they carry ``FASTMICE_SERVED_BY``), and
nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script", ["serve.sh", "local_server.sh"])
def test_stop_ends_the_runs_a_killed_serve_process_left_and_nothing_else(tmp_path, script):
    gone_pid = "2147480000"  # the serve process: killed, its pid file left
    (tmp_path / "serve.pid").write_text(gone_pid)
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    left = subprocess.Popen(sleeper, env={**os.environ, "FASTMICE_SERVED_BY": gone_pid})
    other = subprocess.Popen(sleeper, env={**os.environ, "FASTMICE_SERVED_BY": "1"})
    try:
        result = subprocess.run([str(ROOT / "infra" / script), "stop", "--home", str(tmp_path)],
                                capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert left.wait(10) == -9
        assert other.poll() is None
        assert not (tmp_path / "serve.pid").exists()
    finally:
        left.kill()
        other.kill()
