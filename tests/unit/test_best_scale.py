"""The best mode at scale scores at least the paper mode's NMI (half a point of slack).

On the partial-latent shape of benchmarks/shapes.py (each view sees half of the latent
space, a weak fourth view) base clusterings whose agreement is counted in proportion lift
the best single-view groups over the groups that see the other halves, and the consensus
loses what only those see (docs/quality.md, "The best mode at scale": -1.1 to -1.7 NMI
points at 100,000 samples, k = 400). Here, at CI size (MEASURED below, narrow views), the
base clusterings are computed once (the best mode's are the paper mode's on these dense
views with k above 25: same draws, no empty rows) and the best mode's consensus is compared
with the paper mode's; with proportional weights above 20,000 samples too, the test fails.
"""

import dataclasses

import numpy as np
import pytest
from benchmark_loader import load_benchmark

from fastmice import FastMICE, _best, consensus_partition, draw_view_groups
from fastmice.metrics import clustering_scores

N_SAMPLES, N_CLUSTERS, N_GROUPS = 40_000, 200, 20
DIMS, NOISE_SCALE = (236, 144, 128, 160), 0.5
# Measured (seed 0, CODE_VERSION 12): paper 0.7719, best 0.7719 (every weight 1 under the
# knee), proportional weights 0.7614 (3 replicates) and 0.7619 (1 replicate). 55.6 s
# on 2 cores (80 s on a host loaded 3-5).


def _best_consensus_nmi(model, y: np.ndarray) -> float:
    labels = consensus_partition(model.base_labels_, N_CLUSTERS, seed=model.root_seed_,
                                 n_jobs=2, mode="best").labels_
    return clustering_scores(y, labels)["nmi"]


@pytest.mark.slow
def test_best_mode_at_scale_at_least_the_paper_mode(monkeypatch):
    Xs, y = load_benchmark("shapes").make_shape("partial", N_SAMPLES, N_CLUSTERS, seed=0,
                                               dims=DIMS, noise_scale=NOISE_SCALE)
    paper = FastMICE(N_CLUSTERS, n_groups=N_GROUPS, random_state=0, n_jobs=2).fit(Xs)
    best_draw = FastMICE(N_CLUSTERS, n_groups=N_GROUPS, mode="best", random_state=0)
    params = best_draw._check_params(N_SAMPLES, len(Xs))
    assert params.mode == "best"  # no fence: the best mode runs at this size
    best_specs = draw_view_groups(list(DIMS), N_SAMPLES,
                                  dataclasses.replace(params, metric=paper.metrics_),
                                  seed=paper.root_seed_)
    assert [s.n_base_clusters for s in best_specs] == \
        [s.n_base_clusters for s in paper.view_groups_]
    paper_nmi = clustering_scores(y, paper.labels_)["nmi"]
    best_nmi = _best_consensus_nmi(paper, y)
    assert best_nmi >= paper_nmi - 0.005, (best_nmi, paper_nmi)
    # CODE_VERSION 11's weights (one replicate, for time): the test fails with them.
    monkeypatch.setattr(_best, "CHOICES", _best.BestChoices(proportional_max_samples=10**9,
                                                            replicates=1))
    proportional = _best_consensus_nmi(paper, y)
    assert proportional < paper_nmi - 0.005, (proportional, paper_nmi)
