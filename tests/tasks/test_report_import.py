"""The flows load matplotlib only when a report is drawn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_importing_the_flows_does_not_load_matplotlib():
    code = ("import sys, flows.pipeline, tasks.results; "
            "print(any(m.split('.')[0] == 'matplotlib' for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[2])
    assert out.stdout.strip() == "False"
