"""``--memory-limit`` between what one and two view groups at once need: the run goes on with
one group at a time (it was refused), says so, and gives the same labels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastmice
from pipeline.ingest import save_views_dir
from pipeline.params import ensemble_params
from pipeline.resources import NotEnoughMemoryError, check_memory
from storage import open_store
from tests.reliability.reliability_kit import labels_of

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = {"n_clusters": 4, "n_groups": 4, "n_anchors": 50, "random_state": 1}


def _cli(argv: list, api_url: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PREFECT_API_URL=api_url, FASTMICE_WARM="0",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "cli", *map(str, argv)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.flows
def test_a_limit_that_fits_one_group_runs_one_group_at_a_time(prefect_api, blobs, tmp_path):
    Xs, y = blobs
    save_views_dir(tmp_path / "blobs", Xs, y)
    n, widths, itemsize = Xs[0].shape[0], [X.shape[1] for X in Xs], Xs[0].dtype.itemsize
    params = ensemble_params(n, len(Xs), **OPTIONS)
    one, two = (check_memory(params, n, widths, itemsize=itemsize, limit=2**50,
                             groups=g).total for g in (1, 2))
    assert one < two
    limit = (one + two) // 2
    with pytest.raises(NotEnoughMemoryError):  # two at once, the default, would not fit
        check_memory(params, n, widths, itemsize=itemsize, limit=limit)

    argv = ["cluster", tmp_path / "blobs", "--store", tmp_path / "store", "--k", 4,
            "--groups", 4, "--anchors", 50, "--seed", 1, "--memory-limit", limit]
    done = _cli([*argv, "--json"], prefect_api)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["groups_at_once"] == 1
    expected = fastmice.FastMICE(4, n_groups=4, n_anchors=50, random_state=1,
                                 mode="best").fit(Xs).labels_
    np.testing.assert_array_equal(labels_of(open_store(tmp_path / "store"),
                                            summary["run_id"]), expected)
    shown = json.loads(_cli(["show", summary["run_id"], "--json", "--store",
                             tmp_path / "store"], prefect_api).stdout)
    assert shown["params"]["n_jobs"] == 1  # the workers it ran on
    said = _cli([*argv[:2], "--store", tmp_path / "said", *argv[4:]], prefect_api)
    assert "1 view group(s) at a time" in said.stdout

    refused = _cli([*argv[:2], "--store", tmp_path / "refused", *argv[4:-1], one // 2],
                   prefect_api)  # not even one group at a time fits
    assert refused.returncode == 1
    assert "Nothing was written" in refused.stderr
    assert not (tmp_path / "refused").exists() or not any((tmp_path / "refused").rglob("*.npy"))
