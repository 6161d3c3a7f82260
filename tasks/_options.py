"""What every pipeline task shares: no Prefect result cache, retries for I/O errors only.

The content-addressed store is the only reuse mechanism (:mod:`pipeline.reuse`): each task
body skips the work whose outputs are stored. Prefect runs the tasks with ``NO_CACHE``, so it
keeps no result records that could disagree with the store.

A corrupt input is not retried: the store has set it aside (quarantine), so a retry could
only fail again, less clearly. The step that makes that input recomputes it when the run is
rerun; a damaged dataset file needs its data registered again (the message says how).
"""

from __future__ import annotations

from typing import Any

from prefect.cache_policies import NO_CACHE

__all__ = ["TASK_OPTIONS", "retry_on_io"]


def retry_on_io(task: Any, task_run: Any, state: Any) -> bool:
    """Retry a failed task only for I/O errors; a ``ValueError`` (a corrupt input included)
    does not fix itself."""
    try:
        state.result()
    except OSError:
        return True
    except Exception:
        return False
    return False


#: Decorator options of every pipeline task.
TASK_OPTIONS: dict[str, Any] = {
    "cache_policy": NO_CACHE,
    "retries": 1,
    "retry_delay_seconds": 1,
    "retry_condition_fn": retry_on_io,
}
