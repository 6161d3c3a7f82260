"""``n_clusters="auto"``: k chosen by the eigengap of the consensus graph."""

import itertools

import numpy as np
import pytest

from fastmice import ConsensusPartition, EnsembleParams, FastMICE, consensus_partition
from fastmice._auto_k import AUTO_K_BOUNDS, auto_reference_k, choose_n_clusters
from fastmice.datasets import make_multiview_blobs
from fastmice.metrics import clustering_scores


def test_the_parameter_accepts_auto_and_keeps_it_in_its_dict():
    params = EnsembleParams("auto", random_state=0).for_data(500, 2)
    assert params.n_clusters == "auto" and params.to_dict()["n_clusters"] == "auto"
    assert EnsembleParams.from_dict(params.to_dict()) == params
    assert params.reference_k(500) == auto_reference_k(500) == 11
    assert EnsembleParams(7).reference_k(500) == 7
    with pytest.raises(ValueError, match="must be an int >= 2 or 'auto'"):
        EnsembleParams("many")
    with pytest.raises(ValueError, match="needs at least 3 samples"):
        EnsembleParams("auto").for_data(2, 1)


def test_the_reference_k_grows_as_sqrt_n_within_bounds():
    assert auto_reference_k(10) == AUTO_K_BOUNDS[0]
    assert auto_reference_k(2_000) == 22
    assert auto_reference_k(10**7) == AUTO_K_BOUNDS[1]


@pytest.mark.parametrize("k", [3, 5, 8])
def test_blobs_get_their_number_of_clusters(k):
    Xs, y = make_multiview_blobs(n_samples=800, n_views=2, n_clusters=k, random_state=k)
    model = FastMICE("auto", n_groups=10, n_anchors=100, random_state=0).fit(Xs)
    assert model.n_clusters_ == k
    assert model.k_candidates_[0][0] == k
    scores = [gap * np.log(c) for c, gap in model.k_candidates_]  # ranked by gap * ln k
    assert all(a >= b - 1e-3 for a, b in itertools.pairwise(scores))  # gaps shown rounded
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
    assert choice.candidates[-1] == min(2 * AUTO_K_BOUNDS[1], 5 * 12 - 1)  # k0 = 50


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
