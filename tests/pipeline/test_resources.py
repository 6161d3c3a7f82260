"""The memory estimate and the refusal of runs that would not fit."""

import dataclasses

import pytest

from fastmice import EnsembleParams, estimate_memory
from pipeline.resources import NotEnoughMemoryError, check_memory, parse_size

YTF = [944, 576, 512, 640]


@pytest.mark.parametrize(("text", "size"), [("8G", 8 * 2**30), ("500m", 500 * 2**20),
                                              ("1.5GiB", int(1.5 * 2**30)), ("123", 123)])
def test_sizes_are_read_with_their_units(text, size):
    assert parse_size(text) == size


def test_a_size_that_is_not_one_is_named():
    with pytest.raises(ValueError, match="memory size '8 apples'"):
        parse_size("8 apples")


def test_the_estimate_grows_with_samples_groups_clusters_and_workers():
    base = EnsembleParams(400)
    small = estimate_memory(base, 100_000, YTF).total
    assert estimate_memory(base, 400_000, YTF).total > small
    assert estimate_memory(dataclasses.replace(base, n_groups=40), 100_000, YTF).total >= small
    assert estimate_memory(dataclasses.replace(base, n_clusters=800), 100_000, YTF).total > small
    assert estimate_memory(base, 100_000, YTF, n_workers=4).total > small
    with_views = estimate_memory(base, 100_000, YTF, views_in_memory=True)
    assert with_views.views == 100_000 * sum(YTF) * 4


def test_a_run_that_fits_passes_and_one_that_does_not_says_what_would():
    params = EnsembleParams(400, n_groups=60)
    estimate = check_memory(params, 1_000_000, YTF, limit=2**40)
    assert estimate.total < 2**40
    fewer_groups = estimate_memory(dataclasses.replace(params, n_groups=30), 1_000_000, YTF)
    assert fewer_groups.total < estimate.total  # at 60 groups the consensus is the peak
    with pytest.raises(NotEnoughMemoryError) as refused:
        check_memory(params, 1_000_000, YTF, limit=fewer_groups.total)
    message = str(refused.value)
    assert "1000000 samples, k = 400 and 60 view groups" in message
    assert "--groups 30" in message and message.endswith("Nothing was written.")
    with pytest.raises(NotEnoughMemoryError, match="it needs a machine with at least"):
        check_memory(params, 1_000_000, YTF, limit=2**20)


def test_when_no_single_change_fits_the_refusal_offers_combined_ones():
    params = EnsembleParams(400, n_groups=60)
    alone = [estimate_memory(dataclasses.replace(params, **change), 1_000_000, YTF).total
             for change in ({"n_groups": 30}, {"n_clusters": 200})]
    alone.append(estimate_memory(params, 1_000_000, YTF, n_workers=1).total)
    both = estimate_memory(dataclasses.replace(params, n_groups=30), 1_000_000, YTF,
                           n_workers=1).total
    limit = min(alone) - 1
    assert both <= limit  # this shape has a limit no single change meets, but a pair does
    with pytest.raises(NotEnoughMemoryError) as refused:
        check_memory(params, 1_000_000, YTF, limit=limit)
    assert "--n-jobs 1 --groups 30" in str(refused.value)
