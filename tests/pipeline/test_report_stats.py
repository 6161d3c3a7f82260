"""The numbers and figures of a run report (pipeline.report_stats, pipeline.report_figures)."""

from __future__ import annotations

import numpy as np
import pytest

import fastmice
from pipeline import report_figures as figures
from pipeline.report_stats import (
    compare_labels,
    consensus_map,
    contingency,
    matched_columns,
    nmi_matrix,
)


def test_nmi_matrix_equals_the_metrics_nmi():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 5, 2000)
    noisy = np.where(rng.random(2000) < 0.3, rng.integers(0, 7, 2000), truth)
    other = rng.integers(0, 3, 2000)
    nmi = nmi_matrix(np.column_stack([truth, noisy, other, truth * 0]))
    assert np.allclose(np.diag(nmi), 1.0) and np.allclose(nmi, nmi.T)
    for (a, x), (b, y) in [((0, truth), (1, noisy)), ((1, noisy), (2, other))]:
        assert nmi[a, b] == pytest.approx(fastmice.metrics.clustering_scores(x, y)["nmi"],
                                          abs=1e-12)
    assert nmi[0, 3] == 0.0  # a single cluster shares no information


def test_matched_columns_faces_each_cluster_with_its_class():
    table = contingency(np.array([0, 0, 0, 1, 1, 2, 2, 2]),
                        np.array([2, 2, 1, 0, 0, 1, 1, 3]))
    assert matched_columns(table).tolist() == [1, 2, 0, -1]


def test_compare_labels_joins_on_ids_and_counts_moves_up_to_renaming():
    rng = np.random.default_rng(1)
    before = rng.integers(0, 4, 1000)
    ids = np.arange(1000)
    renamed = np.array([2, 0, 3, 1])[before]  # the same partition, other names
    same = compare_labels(ids, renamed, ids, before)
    assert (same.n_common, same.n_moved, same.n_new) == (1000, 0, 0)
    np.testing.assert_array_equal(same.sizes_after, same.sizes_before)

    moved = renamed.copy()
    moved[:7] = (moved[:7] + 1) % 4
    order = rng.permutation(1000)  # the earlier run's rows in another order
    change = compare_labels(np.arange(1200), np.concatenate([moved, np.zeros(200, int)]),
                            ids[order], before[order])
    assert (change.n_common, change.n_moved, change.n_new) == (1000, 7, 200)
    assert change.sizes_after.sum() == 1200


def test_consensus_map_separates_the_consensus_clusters(blobs):
    Xs, _ = blobs
    model = fastmice.FastMICE(4, n_groups=5, n_anchors=60, random_state=0).fit(Xs)
    xy = consensus_map(model.consensus_, model.base_labels_)
    assert xy.shape == (len(model.labels_), 2) and np.isfinite(xy).all()
    centres = np.array([xy[model.labels_ == c].mean(axis=0) for c in range(4)])
    nearest = np.argmin(((xy[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
    assert np.mean(nearest == model.labels_) > 0.9
    # Only the given samples' rows are used: a subset gets a map of its own size.
    assert consensus_map(model.consensus_, model.base_labels_[:50]).shape == (50, 2)


def test_the_map_has_one_panel_without_classes_and_two_with():
    xy = np.random.default_rng(2).normal(size=(300, 2))
    codes = np.arange(300) % 3
    names = {c: f"cluster {c}" for c in range(3)}
    one = figures.sample_map(xy, codes, names)
    two = figures.sample_map(xy, codes, names, codes, names)
    assert one.startswith("<svg") and one.count("<image") == 1
    assert two.count("<image") == 2


def test_the_map_names_every_colour(monkeypatch):
    monkeypatch.setattr(figures, "_svg", lambda fig, name: fig)  # the figure, not its SVG
    xy = np.random.default_rng(3).normal(size=(400, 2))
    clusters, classes = np.arange(400) % 4, np.arange(400) % 5
    fig = figures.sample_map(xy, clusters, {c: f"cluster {c}" for c in range(4)}, classes,
                             {c: f"class {c}" for c in range(5)})
    by_cluster, by_class = (ax.get_legend() for ax in fig.axes)
    assert [t.get_text() for t in by_cluster.get_texts()] == [f"cluster {c}" for c in range(4)]
    assert [t.get_text() for t in by_class.get_texts()] == [f"class {c}" for c in range(5)]
    # The legend's colours are the points' colours.
    colours = figures.colour_table(5)
    for handle, code in zip(by_class.legend_handles, range(5), strict=True):
        np.testing.assert_allclose(handle.get_facecolor()[0], colours[code])
    many = figures.sample_map(xy, np.arange(400) % 40, {c: f"c{c}" for c in range(40)})
    assert many.axes[0].get_legend() is None
    assert sorted(t.get_text() for t in many.axes[0].texts) == sorted(f"c{c}" for c in range(40))


def test_colour_table_gives_distinct_colours_for_many_clusters():
    for n in (4, 15, 400):
        colours = figures.colour_table(n)
        assert colours.shape == (n, 4)
        assert len({tuple(np.round(c, 6)) for c in colours}) == n
