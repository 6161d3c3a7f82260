"""``check_store``: verify every checksum and every reference of a store; optionally repair it.

What it looks at, and what ``repair=True`` does about it:

============================== ===================================== =======================
found                          meaning                               repair
============================== ===================================== =======================
corrupt artifact               size, sha256 or ``meta.json`` wrong   quarantined (as a read
                                                                     would); recomputed by
                                                                     the next run needing it
corrupt record version         unreadable or sha256 mismatch         quarantined; the
                                                                     version before it is
                                                                     the latest again
incomplete artifact folder     a folder without ``meta.json``        quarantined
leftover ``.tmp-*`` entry      a write killed midway                 removed once older than
                                                                     ``leftover_age`` (a
                                                                     younger one may be a
                                                                     write in progress)
damaged input batch            a dataset's view, ids or labels file  none possible: register
                               missing or corrupt                    the same data again
missing computed artifact      a run refers to an artifact that is   none needed: the run's
                               not stored (any more)                 command recomputes it
============================== ===================================== =======================

Everything is read-only without ``repair``. The report (:class:`FsckReport`) lists every
finding in one line and says what was done; ``problems`` counts what still needs a person.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from storage.backend import META_FILE, RECORDS
from storage.datasets import RECORD_KIND as DATASET
from storage.errors import ArtifactIntegrityError, ArtifactNotFoundError

__all__ = ["LEFTOVER_AGE", "Finding", "FsckReport", "check_store"]

#: Seconds after which a ``.tmp-*`` leftover is surely not a write in progress.
LEFTOVER_AGE = 3600.0


@dataclass
class Finding:
    """One thing found: ``what`` (``corrupt``, ``leftover``, ``damaged-input``, ``missing``,
    ...), the ``subject`` (``anchor-graph/<key>``, ``run/<name> v1``, a path), the
    ``problem``, what was ``done`` about it, and whether it still needs a person (``open``)."""

    what: str
    subject: str
    problem: str
    done: str
    open: bool

    def line(self) -> str:
        return f"{self.what:<14} {self.subject}: {self.problem} -> {self.done}"


@dataclass
class FsckReport:
    """What :func:`check_store` checked and found."""

    store: str
    repair: bool
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: The latest valid content of every record, by ``(kind, name)``.
    records: dict[tuple[str, str], dict] = field(default_factory=dict, repr=False)

    @property
    def problems(self) -> int:
        """Findings that still need a person (0: the store is sound)."""
        return sum(f.open for f in self.findings)

    def add(self, what: str, subject: str, problem: str, done: str, open_: bool) -> None:
        self.findings.append(Finding(what, subject, problem, done, open_))

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "repair": self.repair, "counts": self.counts,
                "problems": self.problems,
                "findings": [f.__dict__ for f in self.findings]}


def check_store(store: Any, *, repair: bool = False,
                leftover_age: float = LEFTOVER_AGE) -> FsckReport:
    """Verify every artifact's checksum, every record version and every reference.

    Parameters
    ----------
    store : BaseStore
    repair : bool, default=False
        Quarantine what is corrupt and remove old leftovers (see the module docstring);
        without it nothing in the store changes.
    leftover_age : float
        Seconds after which a ``.tmp-*`` entry is removed by a repair.

    Returns
    -------
    report : FsckReport
    """
    report = FsckReport(store.url, repair)
    valid = _check_artifacts(store, report, leftover_age)
    report.records = _check_records(store, report, leftover_age)
    _check_references(store, report, valid, report.records)
    report.counts["quarantined"] = len(store.quarantined())
    return report


def _check_artifacts(store: Any, report: FsckReport, leftover_age: float) -> set[tuple]:
    valid: set[tuple[str, str]] = set()
    n = 0
    for kind in store.kinds():
        for shard in store._listdir(kind):
            rel_shard = f"{kind}/{shard}"
            if shard.startswith("."):
                _leftover(store, report, rel_shard, leftover_age)
                continue
            for key in store._listdir(rel_shard):
                rel = f"{rel_shard}/{key}"
                if key.startswith("."):
                    _leftover(store, report, rel, leftover_age)
                elif not store._isfile(f"{rel}/{META_FILE}"):
                    done = "left in place"
                    if report.repair and store._quarantine(kind, key, "incomplete artifact folder",
                                                           store._display(rel)):
                        done = "quarantined"
                    report.add("incomplete", store._display(rel), f"no {META_FILE}", done,
                               not report.repair)
                else:
                    n += 1
                    if _verify(store, report, kind, key):
                        valid.add((kind, key))
    report.counts["artifacts"] = n
    return valid


def _verify(store: Any, report: FsckReport, kind: str, key: str) -> bool:
    try:
        reason = store.verify(kind, key, quarantine=report.repair)
    except ArtifactNotFoundError:
        return False  # removed meanwhile
    if reason is None:
        return True
    report.add("corrupt", f"{kind}/{key}", reason,
               "quarantined (recomputed or restored when needed)" if report.repair
               else "left in place (fsck --repair sets it aside)", not report.repair)
    return False


def _leftover(store: Any, report: FsckReport, rel: str, leftover_age: float) -> None:
    modified = store._modified(rel)
    age = None if modified is None else time.time() - modified
    old = age is not None and age > leftover_age
    done = "left in place"
    if report.repair and old and store._remove_dir(rel):
        done = "removed"
    elif report.repair and not old:
        done = "left in place (may be a write in progress)"
    report.add("leftover", store._display(rel),
               "temporary entry of an unfinished write" + (f", {age / 60:.0f} min old"
                                                            if age is not None else ""),
               done, False)


def _check_records(store: Any, report: FsckReport,
                   leftover_age: float) -> dict[tuple[str, str], dict]:
    """Verify every version of every record; the latest valid content of each."""
    latest: dict[tuple[str, str], dict] = {}
    n = 0
    for kind in store._listdir(RECORDS):
        if kind.startswith("."):
            continue
        for name in store._listdir(f"{RECORDS}/{kind}"):
            for entry in store._listdir(f"{RECORDS}/{kind}/{name}"):
                if entry.startswith("."):
                    _leftover(store, report, f"{RECORDS}/{kind}/{name}/{entry}", leftover_age)
        for name in store.list_records(kind):
            for version in store.record_versions(kind, name):
                n += 1
                reason = store.verify_record(kind, name, version, quarantine=report.repair)
                if reason is not None:
                    report.add("corrupt", f"record {kind}/{name} v{version}", reason,
                               "quarantined (the version before it is the latest again)"
                               if report.repair else "left in place (fsck --repair sets it "
                               "aside)", not report.repair)
            with contextlib.suppress(ArtifactNotFoundError, ArtifactIntegrityError):
                latest[(kind, name)] = store.read_latest(kind, name)[1] if report.repair \
                    else _latest_valid(store, kind, name)
    report.counts["records"] = n
    return latest


def _latest_valid(store: Any, kind: str, name: str) -> dict:
    for version in reversed(store.record_versions(kind, name)):
        if store.verify_record(kind, name, version) is None:
            return store.read_record(kind, name, version=version)
    raise ArtifactNotFoundError(name)


def _refs(obj: Any) -> list[dict[str, str]]:
    """Every artifact ref (a dict of exactly kind, key, format) inside a record."""
    if isinstance(obj, dict):
        if set(obj) == {"kind", "key", "format"}:
            return [obj]
        return [r for v in obj.values() for r in _refs(v)]
    if isinstance(obj, list):
        return [r for v in obj for r in _refs(v)]
    return []


def _check_references(store: Any, report: FsckReport, valid: set[tuple],
                      records: dict[tuple[str, str], dict]) -> None:
    n = 0
    for (kind, name), content in sorted(records.items()):
        if kind == DATASET:
            n += _check_dataset(report, valid, name, content)
            continue
        refs = {(r["kind"], r["key"]) for r in _refs(content)}
        n += len(refs)
        missing = sorted(k for k, _ in refs - valid)
        if missing:
            kinds = ", ".join(f"{k} x{missing.count(k)}" for k in sorted(set(missing)))
            report.add("missing", f"record {kind}/{name}",
                       f"{len(missing)} of {len(refs)} artifacts it refers to are not stored "
                       f"({kinds})", "none needed: recomputed when its command is rerun",
                       False)
    report.counts["references"] = n


def _check_dataset(report: FsckReport, valid: set[tuple], name: str, manifest: dict) -> int:
    n = 0
    for batch in manifest.get("batches", []):
        files = [(f"view {v}", r) for v, r in enumerate(batch["views"])] + [("ids", batch["ids"])]
        if batch.get("labels"):
            files.append(("labels", batch["labels"]))
        n += len(files)
        bad = [what for what, r in files if (r["kind"], r["key"]) not in valid]
        if bad:
            report.add("damaged-input", f"dataset {name} batch {batch['batch_id']}",
                       f"{', '.join(bad)} missing or corrupt",
                       f"register the same data again: `fastmice append {name} DATA` (or "
                       f"`fastmice cluster DATA --name {name}` for a one-batch dataset)", True)
    return n

