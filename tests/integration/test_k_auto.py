"""``n_clusters="auto"`` on mfeat (10 classes): k between 5 and 20, NMI >= 0.8."""

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
