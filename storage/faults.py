"""Fault injection for the reliability tests: kill the process, or fail a write, at a named point.

Nothing happens unless the environment variable ``FASTMICE_FAULT`` is set. It holds one rule,
or several separated by commas, each ``STAGE:OCCURRENCE[:ACTION]``:

* ``STAGE`` names a fault point, or several with shell wildcards (``write:*``). The points:

  ============================ ========================================================
  ``write:<kind>``             an artifact's data file is being written: the first chunk
                               is on disk, the rest is not (the artifact is not visible)
  ``published:<kind>``         an artifact has just been made visible
  ``record:<kind>``            a record version (``run``, ``dataset``) is about to be
                               created
  ``compute:<kind>``           a step has computed its outputs (the last one of kind
                               ``<kind>``: ``anchor-graph``/``group-anchors``,
                               ``base-labels``, ``consensus``...) but stored none of them
  ============================ ========================================================

* ``OCCURRENCE`` is ``N`` (the N-th time this process passes a matching point, from 1) or
  ``N+`` (the N-th time and every later one);
* ``ACTION`` is ``kill`` (``SIGKILL`` to this process: a crash, the default), ``term``
  (``SIGTERM``), ``int`` (``SIGINT``), ``enospc`` (an ``OSError`` "No space left on
  device", as a full disk gives) or ``sleep`` (a 1 s pause: a slow step, to interrupt).

For example ``FASTMICE_FAULT=write:anchor-graph:2`` kills the process while it writes its
second graph file, and ``FASTMICE_FAULT='write:*:1+:enospc'`` makes every artifact write
fail as on a full disk. Counts are per process.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["FAULT_ENV", "fault_point", "guard_writes", "reset"]

#: The environment variable holding the fault rules.
FAULT_ENV = "FASTMICE_FAULT"
_ACTIONS = ("kill", "term", "int", "enospc", "sleep")

_lock = threading.Lock()
_counts: Counter[int] = Counter()


@dataclass(frozen=True)
class _Rule:
    index: int
    stage: str
    occurrence: int
    and_later: bool
    action: str


@functools.cache
def _parse(spec: str) -> tuple[_Rule, ...]:
    rules = []
    for i, text in enumerate(filter(None, (t.strip() for t in spec.split(",")))):
        parts = text.split(":")
        action = parts.pop() if parts[-1] in _ACTIONS else "kill"
        occurrence = parts.pop() if len(parts) > 1 else ""
        try:
            n = int(occurrence.removesuffix("+"))
        except ValueError:
            raise ValueError(f"{FAULT_ENV}: bad rule {text!r}; expected "
                             f"STAGE:OCCURRENCE[:ACTION], such as write:anchor-graph:2") from None
        rules.append(_Rule(i, ":".join(parts), n, occurrence.endswith("+"), action))
    return tuple(rules)


def _rules(stage: str) -> list[_Rule]:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return []
    return [r for r in _parse(spec) if fnmatch.fnmatchcase(stage, r.stage)]


def reset() -> None:
    """Forget how often each point was passed (for tests that inject faults in-process)."""
    with _lock:
        _counts.clear()


def fault_point(stage: str) -> None:
    """Pass the fault point ``stage``: act if a rule of ``FASTMICE_FAULT`` says so."""
    for rule in _rules(stage):
        with _lock:
            _counts[rule.index] += 1
            n = _counts[rule.index]
        if n == rule.occurrence or (rule.and_later and n > rule.occurrence):
            _act(rule.action, stage)


def _act(action: str, stage: str) -> None:
    if action == "enospc":
        raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (injected at {stage})")
    if action == "sleep":
        time.sleep(1.0)
        return
    os.kill(os.getpid(), {"kill": signal.SIGKILL, "term": signal.SIGTERM,
                          "int": signal.SIGINT}[action])


class _GuardedFile:
    """A file whose first write is followed by the fault point (the rest is not written)."""

    def __init__(self, f: IO[bytes], stage: str) -> None:
        self._f = f
        self._stage = stage
        self._passed = False

    def write(self, data: Any) -> int:
        n = self._f.write(data)
        if not self._passed:
            self._passed = True
            self._f.flush()
            fault_point(self._stage)
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def guard_writes(f: IO[bytes], stage: str) -> IO[bytes]:
    """``f`` itself, or, if a rule names ``stage``, ``f`` with the fault point after its first
    write (so a crash leaves a partly written file)."""
    if not _rules(stage):
        return f
    return _GuardedFile(f, stage)  # type: ignore[return-value]
