"""The ensemble's parameters as command-line options, one per estimator parameter.

The names, defaults and checks are :class:`fastmice.EnsembleParams`'; an option left out is
``None`` (not given), so the default applies where the parameters are built
(:func:`pipeline.params.ensemble_params`).
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Iterator
from typing import Any

from cli.output import CommandError
from pipeline.commands.errors import ParameterError, RequestError
from pipeline.params import (
    BEST_BASE_K_CAP,
    DEFAULT_WORKERS,
    DEFAULTS,
    PARAM_NAMES,
    PIPELINE_MODE,
    PIPELINE_RANDOM_STATE,
)

__all__ = ["OPTIONS", "add_ensemble_options", "add_id_column", "ensemble_values", "option_names",
           "worded"]

#: The option of each parameter (``--random-state`` also answers to ``--seed``).
OPTIONS = {"n_clusters": "--k", "n_groups": "--groups", "n_anchors": "--anchors",
           "n_neighbors": "--neighbors", "feature_ratio": "--feature-ratio",
           "base_clusters": "--base-clusters", "metric": "--metric", "mode": "--mode",
           "random_state": "--random-state", "n_jobs": "--n-jobs"}
assert set(OPTIONS) == set(PARAM_NAMES), "every ensemble parameter needs an option"


def _pair(text: str) -> list[float]:
    """``"0.2,0.8"`` -> ``[0.2, 0.8]`` (the range check is EnsembleParams')."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 2:
        raise argparse.ArgumentTypeError(f"expected two numbers LOW,HIGH; got {text!r}")
    return values


def _k(text: str) -> int | str:
    """``--k``: an int, or ``auto`` (k chosen from the data)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int or 'auto'; got {text!r}") from None


def _default(name: str) -> str:
    value = getattr(DEFAULTS, name)
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def add_ensemble_options(parser: argparse.ArgumentParser, k_help: str) -> None:
    """Add an option for every ensemble parameter (``k_help`` describes ``--k``)."""
    add = parser.add_argument
    add("--k", "--n-clusters", type=_k, dest="n_clusters", metavar="K|auto", help=k_help)
    add("--groups", type=int, dest="n_groups", metavar="M",
        help=f"number of view groups (default: {_default('n_groups')})")
    add("--anchors", type=int, dest="n_anchors", metavar="P",
        help=f"anchors per view group (default: {_default('n_anchors')})")
    add("--neighbors", type=int, dest="n_neighbors", metavar="K",
        help=f"nearest anchors per sample and view group (default: {_default('n_neighbors')})")
    add("--feature-ratio", type=_pair, metavar="LOW,HIGH",
        help=f"range of the fraction of each view's features a group keeps (default: "
             f"{_default('feature_ratio')})")
    add("--base-clusters", type=_pair, metavar="LOW,HIGH",
        help=f"range of a base clustering's cluster count, in multiples of k (default: "
             f"{_default('base_clusters')}; the best mode raises the top to min(sqrt(N), "
             f"{BEST_BASE_K_CAP}) clusters where that is more)")
    add("--metric", help="euclidean, cosine, hellinger or auto (cosine for sparse non-negative "
                         "views, in the best mode hellinger for histograms), or one per view, "
                         "comma-separated (default: auto in the best mode, euclidean in the "
                         "paper mode)")
    add("--mode", choices=("best", "paper"),
        help=f"best: the choices beyond the paper (docs/algorithm.md); paper: the published "
             f"algorithm, as its official code computes it (default: {PIPELINE_MODE})")
    add("--random-state", "--seed", type=int, dest="random_state", metavar="S",
        help=f"random_state of the ensemble (default: {PIPELINE_RANDOM_STATE})")
    add_jobs_option(parser)


def add_jobs_option(parser: argparse.ArgumentParser) -> None:
    """``--n-jobs``: how many view groups run at once (the task runner's workers)."""
    parser.add_argument("--n-jobs", type=int, metavar="N",
                        help=f"view groups computed at once: task-runner threads, or Dask "
                             f"worker processes with --dask local (default: "
                             f"{DEFAULT_WORKERS}; -1: all cores)")


def ensemble_values(args: argparse.Namespace) -> dict[str, Any]:
    """The ensemble parameters given on the command line (``None``: not given)."""
    return {name: getattr(args, name) for name in PARAM_NAMES}


def option_names(message: str) -> str:
    """A parameter error worded with the command's options (``n_clusters=1`` -> ``--k 1``)."""
    for param, option in OPTIONS.items():
        message = re.sub(rf"\b{param}=", f"{option} ", message)
    return message


def add_id_column(parser: argparse.ArgumentParser) -> None:
    """``--id-column NAME`` (``cluster``, ``append``)."""
    parser.add_argument("--id-column", metavar="NAME",
                        help="the column of sample ids in .parquet/.csv views: stored with "
                             "the data, carried into every labels table, and the views' rows "
                             "are aligned by it")


@contextlib.contextmanager
def worded() -> Iterator[None]:
    """Errors of the application layer (:mod:`pipeline.commands.errors`) as the command's: a
    wrong parameter said with the command's option names."""
    try:
        yield
    except ParameterError as exc:
        raise CommandError(option_names(str(exc))) from None
    except RequestError as exc:
        raise CommandError(str(exc)) from None
