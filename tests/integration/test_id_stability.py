"""Stable cluster ids on Hdigit through the flows: 9,000 samples clustered, then extended and
reclustered from scratch after 1,000 more (``benchmarks/id_stability.py`` prints the same
figures through the command line)."""

from pathlib import Path

import numpy as np
import pytest

from fastmice.metrics import clustering_scores
from pipeline.ingest import register_batch
from pipeline.keys import RUN

HDIGIT = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "Hdigit.npz"
pytestmark = [pytest.mark.flows, pytest.mark.slow,
              pytest.mark.skipif(not HDIGIT.is_file(), reason=f"{HDIGIT} not found")]


def _labels(store, summary):
    record = store.read_record(RUN, summary["run_id"])
    consensus = np.asarray(store.get(record["consensus"])["labels"])
    return store.get(record["labels"]).column("label").to_numpy(), consensus


def _same_partition(a, b):
    """Whether two labellings differ only by the names of their clusters."""
    pairs = set(zip(a.tolist(), b.tolist(), strict=True))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def test_unchanged_hdigit_samples_keep_their_ids(prefect_api, store):
    from flows.pipeline import cluster_flow, extend_flow, recluster_flow

    with np.load(HDIGIT) as data:
        order = np.random.default_rng(0).permutation(data["labels"].size)
        Xs = [np.ascontiguousarray(data[f"view{v}"][order]) for v in range(2)]
        y = data["labels"][order]
    register_batch(store, "hd", [X[:9000] for X in Xs], y[:9000], mode="create")
    first = cluster_flow(dataset="hd", n_clusters=10, store_url=store.url, n_jobs=2)
    old, _ = _labels(store, first)

    extended = extend_flow(run_id=first["run_id"], n_groups=10, store_url=store.url)
    labels, consensus = _labels(store, extended)
    assert extended["relabel"]["parent_run"] == first["run_id"]
    assert np.mean(labels == old) >= 0.95
    assert extended["relabel"]["kept"] == pytest.approx(np.mean(labels == old), abs=1e-6)
    assert _same_partition(consensus, labels)

    register_batch(store, "hd", [X[9000:] for X in Xs], y[9000:], mode="append")
    anew = recluster_flow(dataset="hd", store_url=store.url, from_scratch=True)
    parent, old = extended, labels  # the latest run
    labels, consensus = _labels(store, anew)
    kept = np.mean(labels[:9000] == old)
    assert anew["relabel"]["parent_run"] == parent["run_id"]
    assert anew["relabel"]["shared_samples"] == 9000
    assert anew["relabel"]["kept"] == pytest.approx(kept, abs=1e-6)
    assert kept >= 0.95
    assert _same_partition(consensus, labels)
    assert anew["scores"] == pytest.approx(clustering_scores(y, consensus))
