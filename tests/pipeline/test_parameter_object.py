"""One parameter object: defined once, and carried whole from the command line into the plan,
the run record and every artifact key."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re

import pytest

import fastmice
from cli.main import build_parser
from cli.options import OPTIONS, ensemble_values
from pipeline.keys import (
    RUN,
    anchors_key,
    base_key,
    consensus_key,
    group_row_keys,
    labels_key,
    specs_key,
)
from pipeline.params import DEFAULT_WORKERS, DEFAULTS, PARAM_NAMES, params_of, task_workers
from pipeline.plans import plan_cluster
from pipeline.results import GroupOutcome, run_record

#: A value other than the default for every parameter, as typed on the command line ...
GIVEN = {"n_clusters": "5", "n_groups": "7", "n_anchors": "60", "n_neighbors": "4",
         "feature_ratio": "0.3,0.7", "base_clusters": "1,1.5",
         "metric": "euclidean,cosine,cosine", "random_state": "11", "n_jobs": "3",
         "mode": "paper"}
#: ... and another one, to see which keys each parameter changes.
OTHER = {"n_clusters": "6", "n_groups": "8", "n_anchors": "61", "n_neighbors": "3",
         "feature_ratio": "0.3,0.75", "base_clusters": "1,1.6",
         "metric": "cosine,cosine,cosine", "random_state": "12", "n_jobs": "1",
         "mode": "best"}


def test_names_and_defaults_are_defined_once():
    assert tuple(inspect.signature(fastmice.FastMICE).parameters) == PARAM_NAMES
    assert fastmice.FastMICE(2).get_params() == {"n_clusters": 2, **vars(DEFAULTS)}
    assert set(vars(DEFAULTS)) == set(PARAM_NAMES) - {"n_clusters"}
    # The estimator's docstring states the same defaults (numpydoc ``default=`` lines).
    documented = dict(re.findall(r"\n    (\w+) : .*, default=(.+)\n", fastmice.FastMICE.__doc__))
    assert set(documented) == set(vars(DEFAULTS))
    assert {name: ast.literal_eval(text) for name, text in documented.items()} == vars(DEFAULTS)


def test_every_parameter_is_settable_from_the_command_line_and_the_flows():
    from flows.deployments import recluster_inbox
    from flows.pipeline import cluster_flow

    assert set(OPTIONS) == set(PARAM_NAMES)
    for flow in (cluster_flow, recluster_inbox):
        assert set(PARAM_NAMES) <= set(inspect.signature(flow.fn).parameters), flow.name


def _plan(store, given):
    argv = ["cluster", "data.npz"]
    for name, value in given.items():
        argv += [OPTIONS[name], value]
    return plan_cluster(store, "blobs", **ensemble_values(build_parser().parse_args(argv)))


def _keys(plan):
    params, anchor_data = plan.params, plan.anchor_data
    specs = [s.to_dict() for s in fastmice.draw_view_groups(
        anchor_data["n_features"], anchor_data["n_samples"], params, seed=params.root_seed)]
    bases = [base_key(group_row_keys(anchor_data, plan.data, params, s), s) for s in specs]
    consensus = consensus_key(bases, params)
    return {"view-groups": specs_key(anchor_data, params, 0, params.n_groups),
            "group-anchors of group 0": anchors_key(anchor_data, params, specs[0]),
            "base-labels of group 0": bases[0], "consensus": consensus,
            "labels": labels_key(consensus, plan.data)}


def test_cli_plan_and_record_carry_the_whole_parameter_object(registered):
    plan = _plan(registered, GIVEN)
    assert plan.params == fastmice.EnsembleParams(
        n_clusters=5, n_groups=7, n_anchors=60, n_neighbors=4, feature_ratio=(0.3, 0.7),
        base_clusters=(1.0, 1.5), metric=("euclidean", "cosine", "cosine"), random_state=11,
        n_jobs=3, mode="paper")
    group = {"group": 0, "anchors": {}, "rows": {}, "computed": True}
    base = {"labels": {}, "partition": {}, "computed": True}
    record = run_record(plan, "r", registered.url, [GroupOutcome(group, [], base)],
                        {"consensus": {}, "computed": True}, 0.0, "2026-01-01", 0.0)
    registered.write_record(RUN, "r", record)
    stored = registered.read_record(RUN, "r")
    assert stored["params"] == plan.params.to_dict() and set(stored["params"]) == set(PARAM_NAMES)
    assert params_of(stored) == plan.params
    assert stored["root_seed"] == fastmice.resolve_seed(11) and "seed" not in stored


@pytest.mark.parametrize("name", PARAM_NAMES)
def test_changing_any_parameter_changes_the_keys_it_affects(registered, name):
    before = _keys(_plan(registered, GIVEN))
    after = _keys(_plan(registered, {**GIVEN, name: OTHER[name]}))
    changed = {kind for kind in before if before[kind] != after[kind]}
    if name == "n_jobs":  # how a run executes, not what it computes
        assert changed == set()
    elif name == "n_groups":  # the ensemble's size: the old groups are reused by `extend`
        assert changed == {"view-groups", "consensus", "labels"}
    else:
        assert changed == set(before)


def test_the_plan_keeps_what_the_estimator_would_use(registered, blobs):
    # Same parameter object, same labels: the pipeline's params drive FastMICE identically.
    plan = _plan(registered, {**GIVEN, "n_groups": "3", "n_anchors": "40"})
    model = fastmice.FastMICE(**{**dataclasses.asdict(plan.params), "n_jobs": None})
    assert model._check_params(600, 3) == dataclasses.replace(plan.params, n_jobs=None)


def test_n_jobs_sizes_the_task_runner_as_joblib_counts():
    assert task_workers(None) == DEFAULT_WORKERS == 2
    assert [task_workers(n, n_cpus=8) for n in (3, -1, -2, -20)] == [3, 8, 7, 1]


def test_paper_mode_keys_are_those_of_stores_written_before_the_mode():
    from pipeline.keys import _params

    paper = fastmice.EnsembleParams(3, random_state=0).for_data(100, 2)
    assert "mode" not in _params(paper) and paper.to_dict()["mode"] == "paper"
    assert _params(dataclasses.replace(paper, mode="best"))["mode"] == "best"


def test_the_command_line_defaults_to_the_best_mode_and_the_library_to_the_paper():
    from pipeline.params import ensemble_params, resolved_metrics

    given = ensemble_values(build_parser().parse_args(["cluster", "data.npz", "--k", "3"]))
    params = ensemble_params(300, 2, **given)
    assert params.mode == "best" and params.metric == ("auto", "auto")
    assert fastmice.FastMICE(3).mode == DEFAULTS.mode == "paper"
    chosen = ensemble_params(300, 2, **{**given, "mode": "paper"})
    assert chosen.mode == "paper" and chosen.metric == ("euclidean", "euclidean")
    import numpy as np
    import scipy.sparse as sp

    text = sp.random(300, 500, density=0.01, random_state=0, format="csr")
    dense = np.random.default_rng(0).random((300, 4))
    assert resolved_metrics(params, [dense, text]) == ["euclidean", "cosine"]
    # Rows of one sum (a histogram) are compared by Hellinger in the best mode only.
    histogram = dense / dense.sum(axis=1, keepdims=True)
    assert resolved_metrics(params, [histogram, text]) == ["hellinger", "cosine"]
    paper_auto = ensemble_params(300, 2, **{**given, "mode": "paper", "metric": "auto"})
    assert resolved_metrics(paper_auto, [histogram, text]) == ["euclidean", "cosine"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["cluster", "data.npz", "--mode", "fast"])
