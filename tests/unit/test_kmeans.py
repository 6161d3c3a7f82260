import numpy as np
import pytest
import scipy.sparse as sp

from fastmice._kmeans import litekmeans, lloyd_rounds
from fastmice._lloyd_batch import batched_rounds
from fastmice._rows import MatrixRows, stable_order


def test_two_obvious_clusters_hand_checked():
    # Whichever two rows start as centres, Lloyd's rounds end at {0, 1} and {10, 11}.
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    for seed in range(10):
        labels, centers = litekmeans(X, 2, rng=np.random.default_rng(seed))
        assert labels[0] == labels[1] != labels[2] == labels[3]
        np.testing.assert_allclose(np.sort(centers[:, 0]), [0.5, 10.5])


def test_empty_cluster_repair_uses_every_label():
    # Three identical points and k=3: the initial centres coincide, so the assignment puts
    # every point in cluster 0 and the repair must hand points to the missing clusters.
    X = np.ones((3, 2))
    labels, _ = litekmeans(X, 3, rng=np.random.default_rng(0))
    assert sorted(labels) == [0, 1, 2]


def test_cosine_assigns_by_direction_and_normalises_centres():
    X = np.array([[1.0, 0.0], [5.0, 0.1], [0.0, 1.0], [0.1, 7.0]])
    labels, centers = litekmeans(X, 2, metric="cosine", rng=np.random.default_rng(1))
    assert labels[0] == labels[1] != labels[2] == labels[3]
    np.testing.assert_allclose(np.linalg.norm(centers, axis=1), 1.0)


def test_replicates_keep_the_smallest_sum_of_distances():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.1, size=(30, 2)) for c in ((0, 0), (5, 0), (0, 5), (5, 5))])

    def cost(labels, centers):
        return np.linalg.norm(X - centers[labels], axis=1).sum()

    single = [cost(*litekmeans(X, 4, max_iter=2, rng=np.random.default_rng(s)))
              for s in range(5)]
    best = cost(*litekmeans(X, 4, max_iter=2, n_init=5, rng=np.random.default_rng(0)))
    assert best <= min(single) + 1e-9


def test_sparse_and_dense_agree():
    rng = np.random.default_rng(3)
    X = rng.random((60, 10)) * (rng.random((60, 10)) < 0.3)
    dense = litekmeans(X, 4, rng=np.random.default_rng(5))
    sparse = litekmeans(sp.csr_matrix(X), 4, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(dense[0], sparse[0])
    np.testing.assert_allclose(dense[1], sparse[1])


def test_fewer_samples_than_clusters_is_an_error():
    with pytest.raises(ValueError, match="n_samples=2 must be >= n_clusters=3"):
        litekmeans(np.zeros((2, 2)), 3, rng=np.random.default_rng(0))


def test_replicates_in_threads_give_the_sequential_result(monkeypatch):
    from fastmice import _kmeans

    X = np.random.default_rng(0).standard_normal((300, 4))
    runs = {}
    for name, threshold in (("sequential", 10**18), ("threads", 0)):
        monkeypatch.setattr(_kmeans, "_PARALLEL_WORK", threshold)
        runs[name] = litekmeans(X, 6, n_init=5, max_iter=20, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(runs["sequential"][0], runs["threads"][0])
    np.testing.assert_array_equal(runs["sequential"][1], runs["threads"][1])


def _one_big_many_small(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit rows: one cluster of 4,000 rows and 19 tight ones of 20 (random starts land
    almost all in the big one)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, 30))
    y = np.concatenate([np.zeros(4000, dtype=int), np.repeat(np.arange(1, 20), 20)])
    X = centres[y] + rng.normal(scale=0.01, size=(len(y), 30))
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


def test_kmeans_plusplus_start_finds_the_small_clusters_random_rows_miss():
    from sklearn.metrics import normalized_mutual_info_score as nmi

    X, y = _one_big_many_small()
    plusplus, _ = litekmeans(X, 20, metric="cosine", init="k-means++",
                             rng=np.random.default_rng(1))
    random_rows, _ = litekmeans(X, 20, metric="cosine", rng=np.random.default_rng(1))
    again, _ = litekmeans(X, 20, metric="cosine", init="k-means++",
                          rng=np.random.default_rng(1))
    np.testing.assert_array_equal(plusplus, again)  # every draw from the one rng
    assert nmi(y, plusplus) > 0.99
    assert nmi(y, random_rows) < 0.95  # what the k-means++ start is for
    with pytest.raises(ValueError, match="init='kmeans'"):
        litekmeans(X, 20, init="kmeans", rng=np.random.default_rng(0))


@pytest.mark.parametrize("sparse", [False, True])
def test_kmeans_plusplus_indices_are_scikit_learns_whatever_the_threads(sparse):
    from sklearn.cluster import kmeans_plusplus

    from fastmice._kmeans import kmeans_plusplus_indices

    rng = np.random.default_rng(3)
    # 4,000 x 1,200: past the size from which a step's row blocks run in threads.
    X = sp.random(4000, 1200, density=0.05, format="csr", random_state=4) if sparse \
        else rng.normal(size=(4000, 1200))
    _, expected = kmeans_plusplus(X, 30, random_state=11)
    for n_jobs in (1, 2, 4):
        np.testing.assert_array_equal(kmeans_plusplus_indices(X, 30, 11, n_jobs), expected)


@pytest.mark.parametrize("n_labels", [1, 7, 2**16, 2**16 + 1, 100_000])
def test_stable_order_is_the_stable_argsort(n_labels):
    labels = np.random.default_rng(n_labels).integers(0, n_labels, 5000)
    labels[:3] = n_labels - 1  # the largest label, where 16 bits must still hold it
    np.testing.assert_array_equal(stable_order(labels, n_labels),
                                  np.argsort(labels, kind="stable"))


@pytest.mark.parametrize("cosine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_replicates_side_by_side_are_each_replicate_alone(cosine, dtype):
    # Starts that stop at different rounds, and duplicate rows that leave clusters empty.
    rng = np.random.default_rng(3)
    blobs = 6 * rng.standard_normal((12, 7))
    X = (rng.standard_normal((2500, 7)) + blobs[rng.integers(0, 12, 2500)]).astype(dtype)
    X[:400] = X[0]  # starts that stop after 8 to 15 rounds, and empty clusters repaired
    if cosine:
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    rows = MatrixRows(X, cosine)
    inits = [np.sort(rng.choice(len(X), 12, replace=False)) for _ in range(6)]
    alone = [lloyd_rounds(rows, rows.take(start), 15) for start in inits]
    together = batched_rounds(X, inits, 15, cosine)
    for (labels_a, centers_a), (labels_t, centers_t) in zip(alone, together, strict=True):
        np.testing.assert_array_equal(labels_t, labels_a)
        np.testing.assert_array_equal(centers_t, centers_a)
        assert centers_t.dtype == dtype and len(np.unique(labels_t)) == 12
