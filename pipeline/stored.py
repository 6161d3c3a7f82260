"""A run whose result is already stored: found before any flow starts.

The same command on the same data, parameters and code computes nothing (every step is
reused); :func:`stored_run` finds the run that already computed it, so that the command can
answer from the store without importing Prefect or starting its API.
"""

from __future__ import annotations

from typing import Any

import fastmice
from pipeline.plans import Plan
from pipeline.results import labels_damage
from pipeline.runs import list_runs

__all__ = ["stored_run"]

#: Parameters that change no result.
_NO_RESULT = ("n_jobs",)


def _result_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in _NO_RESULT}


def stored_run(store: Any, plan: Plan) -> dict[str, Any] | None:
    """The newest run record that computed exactly ``plan`` (same kind, parent run, batches
    and their content, anchor batches, parameters and ``fastmice.CODE_VERSION``, no warm
    start) and whose labels table is intact; None if there is none.

    Parameters
    ----------
    store : store
    plan : Plan
        From :func:`pipeline.plans.plan_cluster` or :func:`~pipeline.plans.plan_extend`.
    """
    if plan.warm_start is not None:
        return None
    wanted = _result_params(plan.params.to_dict())
    for record in reversed(list_runs(store, plan.dataset)):
        if (record.get("kind") == plan.kind and record.get("parent_run") == plan.parent_run
                and record.get("dataset_fingerprint") == plan.data["fingerprint"]
                and record.get("anchor_fingerprint") == plan.anchor_data["fingerprint"]
                and record.get("code_version") == fastmice.CODE_VERSION
                and record.get("warm_start") is None and record.get("labels")
                and _result_params(record.get("params") or {}) == wanted
                and labels_damage(store, record) is None):
            return record
    return None
