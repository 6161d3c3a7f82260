"""A normal install works: the wheel, installed into a fresh environment, gives a ``fastmice``
command that runs from outside the checkout.

The wheel is built from this checkout (hatchling, no network), installed without its
dependencies into a new virtual environment that sees this environment's packages (numpy,
Prefect, ...) through a path file, not the checkout: what the command imports must come
from the wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from storage import open_store
from tests.reliability.reliability_kit import OPTIONS, ROOT, labels_of, make_data

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed; returns its ``bin`` folder."""
    place = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(place / "dist"), str(ROOT)],
                   check=True, capture_output=True, text=True, timeout=300)
    wheel, = (place / "dist").glob("fastmice-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(place / "env")],
                   check=True, timeout=120)
    python = place / "env" / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True).stdout
    # This environment's dependencies, and not the checkout (its editable-install path file
    # is in that folder, but path files inside a folder named by a path file are not read).
    Path(site.strip(), "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return place / "env" / "bin"


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "FASTMICE_STORE", "FASTMICE_DEBUG", "FASTMICE_FAULT")}
    return {**env, **extra}


def test_the_wheel_holds_the_application_inside_its_own_package(installed, tmp_path):
    where = subprocess.run(
        [str(installed / "python"), "-c",
         "import fastmice, fastmice_app; root = fastmice_app.activate(); import cli, storage;"
         "print(fastmice.__file__); print(cli.__file__); print(storage.__file__); print(root)"],
        cwd=tmp_path, env=_environment(), capture_output=True, text=True, check=True)
    library, cli, storage, root = map(Path, where.stdout.split())
    environment = installed.parent.resolve()
    for module in (library, cli, storage):
        assert environment in module.resolve().parents, f"{module} is not from the wheel"
    assert cli.parent.parent == root and root.name == "fastmice_app"
    assert not (root.parent / "cli").exists()  # no short top-level names in site-packages


def test_the_installed_command_runs_from_outside_the_checkout(installed, tmp_path, prefect_api):
    help_text = subprocess.run([str(installed / "fastmice"), "--help"], cwd=tmp_path,
                               env=_environment(), capture_output=True, text=True, timeout=120)
    assert help_text.returncode == 0, help_text.stderr[-2000:]
    assert "cluster" in help_text.stdout

    data = make_data(tmp_path / "data")
    store_dir = tmp_path / "store"
    done = subprocess.run(
        [str(installed / "fastmice"), "cluster", str(data["tiny"]), "--store", str(store_dir),
         *map(str, OPTIONS), "--json"],
        cwd=tmp_path, env=_environment(PREFECT_API_URL=prefect_api, FASTMICE_WARM="0"),
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    labels = labels_of(open_store(store_dir), summary["run_id"])
    np.testing.assert_array_equal(labels, data["labels"])
