"""The one reuse rule: the content-addressed store is the source of truth.

A step's outputs are named by content keys before it runs; if every one is stored and valid
the step is skipped, otherwise it is computed and its outputs are stored. That is what makes
a rerun free and a run killed at any point resumable; nothing else (no Prefect result
cache) decides whether work is done.

A step is computed under the store lock named by its last output (:mod:`storage.locks`): two
commands running the same step at once compute it once, the second waiting and then reusing
the first's outputs; a lock dies with its owner, so a killed command never blocks the next.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import fastmice
from storage import faults

__all__ = ["stored_or_computed", "stored_refs"]

Outputs = Sequence[tuple[str, str]]


def stored_refs(store: Any, outputs: Outputs) -> list[dict] | None:
    """Refs (dicts) of the artifacts ``outputs`` (``(kind, key)`` pairs) if every one is
    stored and valid, else None.

    ``store.exists`` checksums each artifact; a corrupt one counts as missing (and is
    quarantined by the store), so the caller recomputes it.
    """
    if not all(store.exists(kind, key) for kind, key in outputs):
        return None
    return [store.ref(kind, key).to_dict() for kind, key in outputs]


def stored_or_computed(store: Any, outputs: Outputs, compute: Callable[[], Sequence[Any]]
                       ) -> tuple[list[dict], bool, dict[str, float]]:
    """The refs of a step's outputs, computing and storing them only if one is missing.

    Parameters
    ----------
    store : store
    outputs : sequence of (kind, key)
        The artifacts the step writes. They are written in this order, so the last one
        marks a finished step (a base clustering's labels, say).
    compute : callable
        ``compute()`` returns the objects to store, one per output, in the same order.

    Returns
    -------
    refs : list of dict
        One ref per output, in order.
    computed : bool
        Whether ``compute`` ran.
    seconds : dict
        Seconds per stage the step spent in this thread (:func:`fastmice.record_stages`;
        the writes are the stage ``"write"``).
    """
    with fastmice.record_stages(this_thread=True) as seconds:
        refs, computed = _stored_or_computed(store, outputs, compute)
    return refs, computed, seconds


def _stored_or_computed(store: Any, outputs: Outputs,
                        compute: Callable[[], Sequence[Any]]) -> tuple[list[dict], bool]:
    refs = stored_refs(store, outputs)
    if refs is not None:
        return refs, False
    last_kind, last_key = outputs[-1]
    with store.lock(f"{last_kind}.{last_key}"):
        refs = stored_refs(store, outputs)  # stored by another process while we waited
        if refs is not None:
            return refs, False
        objects = compute()
        faults.fault_point(f"compute:{last_kind}")
        with fastmice.stage("write"):
            refs = [store.put(kind, key, obj).to_dict()
                    for (kind, key), obj in zip(outputs, objects, strict=True)]
    return refs, True
