"""The all-zero rows of a dataset's views, found once per process rather than once per task.

The best mode treats a view's all-zero rows as missing (:func:`fastmice.missing_rows`).
Finding them reads the whole view; the library does it once per fit, but each graph task
of a run reads its views anew, and 20 tasks scanning every view of a 400,000-sample set
read 85 GB (27 thread-seconds, measured). The tasks of a run share a process (threads), so
the masks are kept here, per view of a batch (a batch's fingerprint names its content), and
only for the views a task's group uses.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

import fastmice

__all__ = ["group_empty_rows"]

#: Masks kept (one per view of a batch set: n_samples bytes each).
_MAX_KEPT = 64

_kept: OrderedDict[tuple, np.ndarray] = OrderedDict()
_lock = threading.Lock()
_finding: dict[tuple, threading.Lock] = {}


def group_empty_rows(fingerprints: Sequence[str], Xs: Sequence[Any], views: Sequence[int],
                     mode: str) -> list[np.ndarray | None] | None:
    """What :func:`fastmice.build_group_graph` takes as ``empty_rows`` for a group over
    ``views``: :func:`fastmice.missing_rows` of those views (None for the others), each
    view's mask found once per process.

    Parameters
    ----------
    fingerprints : sequence of str
        The fingerprints of the batches ``Xs`` stacks, in order (they name the data).
    Xs : list of array-likes of shape (n_samples, n_features_v)
    views : sequence of int
        The group's views.
    mode : str
        ``"best"`` or ``"paper"`` (no masks: None).
    """
    if fastmice.missing_rows(Xs[:0], mode) is None:  # ([] when the mode finds them)
        return None
    masks: list[np.ndarray | None] = [None] * len(Xs)
    for view in sorted(set(views)):
        masks[view] = _mask(tuple(fingerprints), view, Xs[view])
    return masks


def _mask(fingerprints: tuple, view: int, X: Any) -> np.ndarray:
    key = (fingerprints, view, X.shape)
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
        finding = _finding.setdefault(key, threading.Lock())
    with finding:  # another task finding the same mask: wait for it rather than read again
        with _lock:
            if key in _kept:
                return _kept[key]
        (mask,) = fastmice.missing_rows([X], "best")
        mask.setflags(write=False)
        with _lock:
            _kept[key] = mask
            _finding.pop(key, None)
            while len(_kept) > _MAX_KEPT:
                _kept.popitem(last=False)
    return mask
