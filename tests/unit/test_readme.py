"""The front page cannot disagree with the code: every number it states is checked here, its
Python lines run, its command lines parse, its two commands exist and its links resolve."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import numpy as np
import pytest

import fastmice
from cli.main import build_parser
from fastmice._best import CHOICES
from fastmice.datasets import make_multiview_blobs
from fastmice.metrics import clustering_scores
from pipeline.params import DEFAULT_WORKERS, PIPELINE_MODE, ensemble_params

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
USAGE = (ROOT / "docs" / "usage.md").read_text()
DEFAULTS = fastmice.EnsembleParams(2)
CITATION = "IEEE TKDE 2023"


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def _demo_views() -> int:
    source = (ROOT / "scripts" / "make_demo_data.py").read_text()
    return len(re.search(r'"--dims", default="([\d,]+)"', source)[1].split(","))


def _python_version() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["requires-python"].removeprefix(">=")


#: Each number the README states, and the code's value it must equal. Numbers of the
#: examples (k = 8, 10 more groups, seed 0) are checked by running and parsing the examples.
STATED = {
    "M = 20": DEFAULTS.n_groups == 20,
    "20-80 %": DEFAULTS.feature_ratio == (0.2, 0.8),
    "p = 1000": DEFAULTS.n_anchors == 1000,
    "K = 5": DEFAULTS.n_neighbors == 5,
    "[k, 2k]": DEFAULTS.base_clusters == (1, 2),
    "max(2k, min(√N, 50))": CHOICES.base_k_cap == 50 and DEFAULTS.base_clusters[1] == 2,
    "Python 3.11": _python_version() == "3.11",
    "a 3-view data set": _demo_views() == 3,
    "FastMICE(n_clusters=8, random_state=0)": True,
    "--k 8": True,
    "--groups 10": True,
    "10 more view groups": True,
}


def test_every_number_on_the_front_page_is_one_the_code_has():
    wrong = [claim for claim, holds in STATED.items() if not holds]
    assert not wrong, f"the README states {wrong}, which the code no longer has"
    missing = [claim for claim in STATED if claim not in README]
    assert not missing, f"checked claims no longer in the README: {missing}"
    text = README.replace(CITATION, "")
    for claim in STATED:
        text = text.replace(claim, "")
    unchecked = re.findall(r"[^\s]*\d[^\s]*", text)
    assert not unchecked, f"numbers on the front page that no test checks: {unchecked}"


def test_the_modes_it_names_are_the_defaults():
    assert 'the command\'s default (the library\'s is `mode="paper"`)' in README
    assert DEFAULTS.mode == "paper"
    assert PIPELINE_MODE == "best"
    assert build_parser().parse_args(["cluster", "x"]).mode in (None, "best")


def test_the_python_lines_run():
    code, = _blocks(README, "python")
    Xs, y = make_multiview_blobs(400, 3, 8, separation=4.0, random_state=0)
    scope = {"Xs": Xs}
    exec(compile(code, "README.md", "exec"), scope)
    labels = scope["model"].labels_
    assert labels.shape == (400,)
    assert len(np.unique(labels)) == 8
    assert clustering_scores(y, labels)["nmi"] > 0.9


def _command_lines() -> list[list[str]]:
    block = _blocks(README[README.index("## Command line"):], "bash")[0]
    commands = []
    for line in block.splitlines():
        for part in line.split("#", 1)[0].split("&&"):
            words = shlex.split(part)
            if words and words[0] == "fastmice":
                commands.append(["RUN-1" if w == "RUN" else w for w in words[1:]])
    return commands


def test_the_command_lines_parse_as_the_command_reads_them():
    commands = _command_lines()
    assert [c[0] for c in commands] == ["cluster", "extend", "append", "recluster", "report"]
    parser = build_parser()
    parsed = [parser.parse_args(argv) for argv in commands]
    assert parsed[0].n_clusters == 8
    assert parsed[1].groups == 10


def test_the_two_commands_exist_and_ci_runs_the_test_one():
    block = _blocks(README[README.index("## Two commands"):], "bash")[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    for command in commands:
        assert (ROOT / command.split()[1]).is_file()
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#")]
    assert "bash scripts/test.sh" in ci


@pytest.mark.parametrize("page", ["README.md", *sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))])
def test_links_resolve(page):
    path = ROOT / page
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text())
    broken = [t for t in targets if "://" not in t and not (path.parent / t).exists()]
    assert not broken, f"{page} links to missing files: {broken}"


def test_the_usage_page_states_the_command_defaults():
    assert f"{DEFAULT_WORKERS} by default" in USAGE
    assert ensemble_params(100, 2, n_clusters=3).n_jobs == DEFAULT_WORKERS  # what `show` says
    assert "`--mode best|paper` (default `best`)" in USAGE
    random_state = re.search(r"`--random-state` \(also `--seed`; default (\d+)", USAGE)
    assert random_state
    assert int(random_state[1]) == ensemble_params(100, 2, n_clusters=3).random_state
