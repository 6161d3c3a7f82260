"""Finished groups survive: a group's base clustering follows its graph, a few groups at a time.

In process, the order of the steps is recorded; through the command, a run killed half way
has stored whole groups, and its rerun computes only the others.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from reliability_kit import ANCHORS, SEED, K, counts, labels_of, make_data, one_json, run_cli

import fastmice
from pipeline.keys import BASE_LABELS

pytestmark = [pytest.mark.flows, pytest.mark.slow]

M = 6


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("depth"))


@pytest.mark.parametrize("width", [1, 2, 3])
def test_groups_run_depth_first_on_the_pool(width, registered, blobs, monkeypatch, battery):
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.pipeline import cluster_flow

    events: list[tuple[str, int]] = []
    lock = threading.Lock()
    real_graph, real_base = fastmice.build_group_graph, fastmice.cluster_group

    def graph(Xs, spec, *args, **kwargs):
        with lock:
            events.append(("graph", spec.group_index))
        return real_graph(Xs, spec, *args, **kwargs)

    def base(B, spec, *args, **kwargs):
        out = real_base(B, spec, *args, **kwargs)
        with lock:
            events.append(("base", spec.group_index))
        return out

    monkeypatch.setattr(fastmice, "build_group_graph", graph)
    monkeypatch.setattr(fastmice, "cluster_group", base)
    summary = cluster_flow.with_options(task_runner=ThreadPoolTaskRunner(max_workers=width))(
        dataset="blobs", n_clusters=4, n_groups=M, n_anchors=40, random_state=SEED,
        store_url=registered.url)
    # When the j-th graph starts (groups start longest first, fastmice.longest_first), at
    # least j - width + 1 groups are whole.
    starts = [i for i, (step, _) in enumerate(events) if step == "graph"]
    late = [events[i][1] for j, i in enumerate(starts)
            if sum(s == "base" for s, _ in events[:i]) < j - width + 1]
    expected = fastmice.FastMICE(4, n_groups=M, n_anchors=40, random_state=SEED,
                                 mode="best").fit(
        blobs[0]).labels_
    same = np.array_equal(registered.get(registered.read_record(
        "run", summary["run_id"])["labels"]).column("label").to_numpy(), expected)
    order = " ".join(f"{s[0]}{g}" for s, g in events)
    assert battery.record("depth first", f"{M} groups on {width} worker thread(s)",
                          f"the j-th group starts once j-{width}+1 groups are whole; library "
                          "labels",
                          f"order {order}; labels {'identical' if same else 'DIFFERENT'}",
                          not late and same), events


def test_a_run_killed_half_way_keeps_whole_groups(data, prefect_api, tmp_path, battery):
    store_dir = tmp_path / "store"
    args = ["cluster", data["tiny"], "--store", store_dir, "--k", K, "--groups", M,
            "--anchors", ANCHORS, "--seed", SEED, "--json"]
    killed = run_cli(args, prefect_api, fault="published:group-anchors:4", check=False)
    from storage import open_store

    store = open_store(store_dir)
    whole = counts(store, BASE_LABELS)[BASE_LABELS]
    rerun = one_json(run_cli(args, prefect_api).stdout)
    expected = fastmice.FastMICE(K, n_groups=M, n_anchors=ANCHORS, random_state=SEED,
                                 mode="best").fit(
        [np.load(data["tiny"] / f"view{v}.npy") for v in range(2)]).labels_
    same = np.array_equal(labels_of(store, rerun["run_id"]), expected)
    ok = (killed.returncode == -9 and whole >= 2 and rerun["groups_computed"] == M - whole
          and same)
    assert battery.record(
        "depth first", f"`cluster` of {M} groups killed when the 4th graph is stored (half "
        "of the steps; graphs-first kept 0 groups there)",
        "whole groups kept; rerun computes only the others; library labels",
        f"{whole} of {M} groups whole at the kill; rerun computed {rerun['groups_computed']}; "
        f"labels {'identical' if same else 'DIFFERENT'}", ok), killed.stderr[-2000:]
