"""``n_clusters="auto"``: an ensemble spread over the candidate ks, and k chosen by the
eigengap of the consensus graph of the base clusterings fine enough for it."""

import itertools
from dataclasses import replace

import numpy as np
import pytest

from fastmice import ConsensusPartition, EnsembleParams, FastMICE, consensus_partition
from fastmice._auto_k import (
    AUTO_BASE_CAP,
    CONSENSUS_RULE,
    auto_base_clusters,
    auto_base_k_top,
    auto_reference_k,
    choose_n_clusters,
)
from fastmice._specs import draw_view_groups
from fastmice.datasets import make_multiview_blobs
from fastmice.metrics import clustering_scores


def test_the_parameter_accepts_auto_and_keeps_it_in_its_dict():
    params = EnsembleParams("auto", random_state=0).for_data(500, 2)
    assert params.n_clusters == "auto" and params.to_dict()["n_clusters"] == "auto"
    assert EnsembleParams.from_dict(params.to_dict()) == params
    assert params.reference_k(500) == auto_reference_k(500) == 63  # K = 125
    assert EnsembleParams(7).reference_k(500) == 7
    with pytest.raises(ValueError, match="must be an int >= 2 or 'auto'"):
        EnsembleParams("many")
    with pytest.raises(ValueError, match="needs at least 3 samples"):
        EnsembleParams("auto").for_data(2, 1)


def test_the_base_ks_spread_over_2_to_k_evenly_in_log():
    assert [auto_base_k_top(n) for n in (3, 10, 50, 500, 2_000, 10**7)] == \
        [2, 9, 15, 125, 400, AUTO_BASE_CAP]
    for seed in range(10):
        ks = np.array([auto_base_clusters(seed, g, 1_000) for g in range(20)])
        assert ks.min() >= 2 and ks.max() <= 250
        quantiles = np.sort(np.log(ks / 2) / np.log(125))
        assert np.diff(np.concatenate([[0], quantiles, [1]])).max() < 0.13  # no scale left out
        # the candidates, below the 4th finest base clustering's k, reach about N / 10
        assert np.sort(ks)[-4] - 1 >= 0.8 * 1_000 / 10
        # group g depends on (seed, g) only: an ensemble extended keeps its groups
        assert [auto_base_clusters(seed, g, 1_000) for g in range(5)] == list(ks[:5])
    assert max(auto_base_clusters(0, g, 1_000, n_anchors=40) for g in range(20)) <= 40


def test_auto_changes_the_base_ks_alone():
    """An auto ensemble's groups are those of a given k but for their number of clusters:
    the draws of a given k (and so its labels) are the same as before."""
    auto = draw_view_groups([20, 30], 1_000, EnsembleParams("auto"), seed=3)
    given = draw_view_groups([20, 30], 1_000, EnsembleParams(auto_reference_k(1_000)), seed=3)
    assert [replace(s, n_base_clusters=0) for s in auto] == \
        [replace(s, n_base_clusters=0) for s in given]
    assert len({s.n_base_clusters for s in auto}) > 10


def test_a_candidate_is_scored_on_the_base_clusterings_finer_than_it():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(12), 40)
    fine = [truth * 3 + rng.integers(0, 3, truth.size) for _ in range(4)]
    base = np.column_stack(fine)
    coarse = rng.permutation(12)[truth] % 3  # 3 clusters, merging the 12 its own way
    alone = choose_n_clusters(base, seed=0)
    more = choose_n_clusters(np.column_stack([base, coarse]), seed=0)
    assert alone.n_clusters == more.n_clusters == 12
    assert list(alone.candidates) == list(more.candidates) == list(range(2, 36))
    # k >= 3: the coarse member is left out of the graph the gap is read from
    np.testing.assert_allclose(alone.scores[1:], more.scores[1:], atol=1e-9)


@pytest.mark.parametrize("k", [3, 5, 8])
def test_blobs_get_their_number_of_clusters(k):
    Xs, y = make_multiview_blobs(n_samples=800, n_views=2, n_clusters=k, random_state=k)
    model = FastMICE("auto", n_groups=10, n_anchors=100, random_state=0).fit(Xs)
    assert model.n_clusters_ == k
    assert model.k_candidates_[0][0] == k
    scores = [score for _, score in model.k_candidates_]  # best first
    assert all(a >= b for a, b in itertools.pairwise(scores))
    assert clustering_scores(y, model.labels_)["nmi"] > 0.95
    assert np.unique(model.labels_).size == k
    np.testing.assert_array_equal(model.predict(Xs[:1] + Xs[1:]), model.predict(Xs))


def test_a_given_k_has_no_candidates(small_views):
    Xs, _ = small_views
    model = FastMICE(3, n_groups=4, n_anchors=40, random_state=0).fit(Xs)
    assert (model.n_clusters_, model.k_candidates_) == (3, None)


def test_the_choice_survives_the_consensus_arrays_and_a_warm_start():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(4), 50)
    base = np.column_stack([(truth * 3 + rng.integers(0, 3, truth.size)) for _ in range(8)])
    consensus = consensus_partition(base, "auto", seed=1)
    assert consensus.n_clusters == consensus.k_choice.n_clusters == 4
    again = ConsensusPartition.from_arrays(consensus.to_arrays())
    assert again.k_choice.ranked() == consensus.k_choice.ranked()
    warm = consensus_partition(base, "auto", seed=1, init=again)
    assert warm.n_clusters == 4 and warm.k_choice.ranked() == consensus.k_choice.ranked()


def test_the_choice_is_linear_in_n_samples():
    # The graph the choice reads is clusters x clusters: a million samples cost no N x N.
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 6, 1_000_000)
    base = np.column_stack([truth * 2 + rng.integers(0, 2, truth.size) for _ in range(5)])
    choice = choose_n_clusters(base, seed=0)
    assert choice.n_clusters == 6
    assert choice.candidates[-1] == 11  # below the second-finest base clustering


def test_the_pipeline_and_the_command_line_read_auto():
    from cli.main import build_parser
    from pipeline.params import ensemble_params

    assert ensemble_params(100, 2, n_clusters="auto").n_clusters == "auto"
    assert ensemble_params(100, 2, n_clusters="8").n_clusters == 8  # a deployment form's text
    args = build_parser().parse_args(["cluster", "x.npz", "--k", "AUTO"])
    assert args.n_clusters == "auto"
    assert build_parser().parse_args(["cluster", "x.npz", "--k", "7"]).n_clusters == 7
    with pytest.raises(SystemExit) as exit_info:  # a usage error: one line, status 1
        build_parser().parse_args(["cluster", "x.npz", "--k", "many"])
    assert exit_info.value.code == 1


def test_the_best_modes_unknown_base_labels_are_left_out_of_the_choice():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(4), 150)
    members = [np.where(rng.random(truth.size) < 0.1, rng.integers(0, 8, truth.size),
                        truth * 2 + rng.integers(0, 2, truth.size)) for _ in range(10)]
    base_labels = np.column_stack(members)
    clean = choose_n_clusters(base_labels, seed=0)
    unknown = base_labels.copy()
    unknown[rng.random(base_labels.shape) < 0.3] = -1  # what groups of empty rows leave
    unknown[:5] = -1  # samples no base clustering knows
    assert clean.n_clusters == 4
    assert choose_n_clusters(unknown, seed=0).n_clusters == 4
    fitted = FastMICE("auto", mode="best", random_state=0).fit(
        make_multiview_blobs(600, n_clusters=4, random_state=0)[0])
    assert fitted.n_clusters_ == 4 and fitted.k_candidates_[0][0] == 4


def test_the_report_draws_the_score_against_k():
    from types import SimpleNamespace

    from pipeline.report import _k_section

    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(4), 50)
    base = np.column_stack([truth * 3 + rng.integers(0, 3, truth.size) for _ in range(8)])
    consensus = consensus_partition(base, "auto", seed=1)
    section = _k_section(SimpleNamespace(consensus=consensus))
    assert section.title == "Choosing k" and section.figure.startswith("<svg")
    assert section.table[1] == ["4", f"{consensus.k_choice.ranked(1)[0][1]:.4f}"]
    assert CONSENSUS_RULE in section.caption  # the rule that made the scores, in words
    assert len(section.table) == 1 + min(10, len(consensus.k_choice.candidates))
    given = consensus_partition(base, 4, seed=1)
    assert _k_section(SimpleNamespace(consensus=given)) is None


def test_the_choice_keeps_its_rule_and_a_stored_one_without_it_reads_back():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(4), 50)
    base = np.column_stack([truth * 3 + rng.integers(0, 3, truth.size) for _ in range(8)])
    consensus = consensus_partition(base, "auto", seed=1)
    assert consensus.k_choice.rule == CONSENSUS_RULE
    arrays = consensus.to_arrays()
    read = ConsensusPartition.from_arrays(arrays).k_choice
    assert read.rule == CONSENSUS_RULE and read.ranked() == consensus.k_choice.ranked()
    older = {k: v for k, v in arrays.items() if k != "k_rule"}  # stored before the rule was
    read = ConsensusPartition.from_arrays(older).k_choice
    assert read.rule is None and read.ranked() == consensus.k_choice.ranked()
