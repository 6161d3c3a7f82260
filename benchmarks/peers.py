"""The methods a user would pick instead of fastmice, on a folder of per-view ``.npy`` files.

Run one in its own process (``python benchmarks/peers.py METHOD DIR K``), which prints one
JSON line: ``{"method", "seconds", "nmi"}``; ``seconds`` is the fit alone (the data are read
first). ``benchmarks/scale.py`` runs them beside fastmice, ``secuer`` from a virtual
environment it makes for it (``secuer`` needs pandas, scanpy, igraph, louvain and numba).

* ``secuer``: anchor-based spectral clustering (the ``secuer`` package, defaults, true k);
* ``lsc``: landmark spectral clustering (Chen & Cai 2011) on the concatenated views, in a few
  lines of scikit-learn: k-means landmarks (1000, learnt on a 10x sample), a sparse Gaussian
  affinity to each sample's 5 nearest landmarks, its top-k singular vectors, k-means;
* ``minibatch-kmeans``: scikit-learn's ``MiniBatchKMeans`` on the concatenated views.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def _load(folder: Path) -> tuple[list[np.ndarray], np.ndarray]:
    views = sorted(folder.glob("view*.npy"), key=lambda p: int(p.stem[4:]))
    return [np.load(p) for p in views], np.load(folder / "labels.npy")


def landmark_spectral(X: np.ndarray, k: int, seed: int, n_landmarks: int = 1000,
                      n_nearest: int = 5) -> np.ndarray:
    """Labels of landmark-based spectral clustering (LSC-K) of the rows of ``X``."""
    from sklearn.cluster import KMeans
    from sklearn.neighbors import NearestNeighbors
    from sklearn.utils.extmath import randomized_svd

    rng = np.random.default_rng(seed)
    sample = X[rng.choice(len(X), min(len(X), 10 * n_landmarks), replace=False)]
    landmarks = KMeans(n_landmarks, n_init=1, max_iter=10, random_state=seed).fit(sample)
    distances, nearest = NearestNeighbors(n_neighbors=n_nearest).fit(
        landmarks.cluster_centers_).kneighbors(X)
    weights = np.exp(-(distances**2) / (2 * np.mean(distances) ** 2))
    weights /= weights.sum(axis=1, keepdims=True)
    Z = sp.csr_matrix((weights.ravel(), nearest.ravel(),
                       np.arange(0, weights.size + 1, n_nearest)),
                      shape=(len(X), n_landmarks))
    degrees = np.asarray(Z.sum(axis=0)).ravel()
    Z = Z @ sp.diags(1.0 / np.sqrt(np.maximum(degrees, 1e-12)))
    U, _, _ = randomized_svd(Z, k, random_state=seed)
    return KMeans(k, n_init=3, random_state=seed).fit_predict(U)


def run(method: str, folder: Path, k: int, seed: int = 0) -> dict:
    """Fit one peer on the data in ``folder``; its seconds and NMI."""
    from sklearn.metrics import normalized_mutual_info_score

    Xs, y = _load(folder)
    started = time.perf_counter()
    if method == "secuer":
        from secuer import secuer

        labels = secuer(np.hstack(Xs), Ks=k, seed=seed)
    elif method == "lsc":
        labels = landmark_spectral(np.hstack(Xs), k, seed)
    elif method == "minibatch-kmeans":
        from sklearn.cluster import MiniBatchKMeans

        labels = MiniBatchKMeans(k, n_init=3, batch_size=4096,
                                 random_state=seed).fit_predict(np.hstack(Xs))
    else:
        raise ValueError(f"unknown method {method!r}")
    seconds = time.perf_counter() - started
    nmi = normalized_mutual_info_score(y, np.asarray(labels).ravel(), average_method="max")
    return {"method": method, "seconds": round(seconds, 2), "nmi": round(float(nmi), 4)}


if __name__ == "__main__":
    method, folder, k = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(run(method, folder, k)))
