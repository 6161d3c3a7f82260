"""``n_clusters="auto"`` on real data: mfeat (10 classes) and 100Leaves (100)."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import normalized_mutual_info_score

from fastmice import FastMICE

MFEAT = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "mfeat.npz"


@pytest.mark.skipif(not MFEAT.is_file(), reason=f"real dataset not found at {MFEAT}")
def test_auto_k_on_mfeat():
    with np.load(MFEAT, allow_pickle=False) as z:
        Xs = [z[f"view{v}"] for v in range(sum(key.startswith("view") for key in z.files))]
        y = z["labels"]
    model = FastMICE("auto", random_state=0, n_jobs=2).fit(Xs)
    assert 5 <= model.n_clusters_ <= 20, model.k_candidates_[:5]
    assert model.k_candidates_[0][0] == model.n_clusters_
    assert normalized_mutual_info_score(y, model.labels_, average_method="max") >= 0.8


LEAVES = MFEAT.with_name("100Leaves.npz")


@pytest.mark.skipif(not LEAVES.is_file(), reason=f"real dataset not found at {LEAVES}")
def test_auto_k_finds_a_hundred_leaf_species():
    """100 classes of 16 samples: the consensus graph's eigengap chose 17 (NMI 0.56); the
    best mode's neighbour graph of the joint space finds about 100."""
    with np.load(LEAVES, allow_pickle=False) as z:
        Xs = [z[f"view{v}"] for v in range(sum(key.startswith("view") for key in z.files))]
        y = z["labels"]
    model = FastMICE("auto", mode="best", random_state=0, n_jobs=2).fit(Xs)
    assert abs(model.n_clusters_ - 100) <= 20, model.k_candidates_[:5]
    assert normalized_mutual_info_score(y, model.labels_, average_method="max") >= 0.9
