"""Answer a command whose every step is stored from the store, without Prefect.

Used by ``cluster`` and ``extend`` before any flow starts: if a run already computed exactly
this (:func:`pipeline.stored.stored_run`), its summary is the answer, with nothing computed,
and neither Prefect nor its API is started (seconds, not tens of seconds). When a Prefect
server is set (``PREFECT_API_URL``), the command runs its flow as before, so that every run
shows in that server's UI.
"""

from __future__ import annotations

from typing import Any

from cli.prefect_home import api_configured
from pipeline.plans import Plan
from pipeline.runs import run_summary
from pipeline.stored import stored_run

__all__ = ["stored_answer", "stored_note"]


def stored_answer(store: Any, plan: Plan) -> dict[str, Any] | None:
    """The summary to print if ``plan``'s result is stored and no Prefect server is set."""
    if api_configured():
        return None
    record = stored_run(store, plan)
    if record is None:
        return None
    summary = run_summary(record)
    summary.update(groups_computed=0, groups_reused=record["n_groups"], work={},
                   group_work={"reused": record["n_groups"]}, consensus_work="reused",
                   seconds=0.0, stages={}, answered_from_store=True)
    return summary


def stored_note(summary: dict[str, Any]) -> str:
    """The line the human-readable output adds to a stored answer."""
    return (f"stored     every step of run {summary['run_id']} is stored: answered from the "
            f"store, no flow run (set PREFECT_API_URL to record runs in a Prefect server)\n")
