"""Keeping a store tidy: what it holds, removing runs and datasets, collecting garbage.

What a kept run needs, so that its command run again computes nothing, is what its record
refers to (every group's anchors, graph rows per batch, base partition and labels; the
consensus; the labels table; the partitions a warm start began from), the drawn view
groups (:func:`pipeline.keys.specs_key`, derived from the record) and its dataset's
batches, which the dataset record refers to. :func:`collect_garbage` removes every
artifact of the pipeline's kinds that no kept run record and no dataset record needs, under
the store's garbage-collection lock and never while a run or a registration is writing
(:mod:`storage.activity`). Nothing a user stored goes without being asked: records are only
removed by :func:`remove` (named runs and datasets) and by a retention (``keep_last``), and
with them the small records that point at them (the stamps of their input files, the kept
answers of :mod:`pipeline.stored`); artifacts of other kinds, quarantine and records are
never collected.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.keys import (
    ANCHORS,
    BASE_LABELS,
    BASE_PARTITION,
    CONSENSUS,
    GRAPH_ROWS,
    LABELS,
    RUN,
    VIEW_GROUPS,
    dataset_ref,
    specs_key,
)
from pipeline.params import params_of
from pipeline.runs import list_runs
from pipeline.sources import forget_sources
from pipeline.stored import forget_answers
from storage import ArtifactIntegrityError, ArtifactNotFoundError, DatasetStore, validate_name
from storage.activity import GC_LOCK, live
from storage.datasets import IDS_KIND, LABELS_KIND, RECORD_KIND, VIEW_KIND
from storage.fsck import LEFTOVER_AGE
from storage.usage import StoreUsage, refs_in, remove_artifact, remove_record, store_usage

__all__ = ["PIPELINE_KINDS", "Collection", "collect_garbage", "plan_removal", "remove",
           "retention", "run_references", "store_report"]

#: The artifact kinds the pipeline writes (the only ones garbage collection removes).
PIPELINE_KINDS = (VIEW_GROUPS, ANCHORS, GRAPH_ROWS, BASE_LABELS, BASE_PARTITION, CONSENSUS,
                  LABELS, VIEW_KIND, IDS_KIND, LABELS_KIND)


@dataclass
class Collection:
    """What a garbage collection removed (or, with ``dry_run`` or while ``busy``, would
    remove): run records, artifacts and leftovers of killed writes, with their sizes."""

    dry_run: bool
    runs: list[str] = field(default_factory=list)
    artifacts: dict[tuple[str, str], int] = field(default_factory=dict)
    leftovers: dict[str, int] = field(default_factory=dict)
    busy: list[str] = field(default_factory=list)
    kept_bytes: int = 0

    @property
    def done(self) -> bool:
        """Whether the removal took place."""
        return not self.dry_run and not self.busy

    @property
    def freed(self) -> int:
        """Bytes removed (or that would be)."""
        return sum(self.artifacts.values()) + sum(self.leftovers.values())

    def to_dict(self) -> dict[str, Any]:
        kinds = Counter(kind for kind, _ in self.artifacts)
        return {"dry_run": self.dry_run, "done": self.done, "busy": self.busy,
                "runs_removed": self.runs, "artifacts_removed": len(self.artifacts),
                "by_kind": dict(sorted(kinds.items())), "leftovers_removed": len(self.leftovers),
                "freed_bytes": self.freed, "kept_bytes": self.kept_bytes}


def _manifests(store: Any) -> dict[str, list[dict[str, Any]]]:
    """Every valid version of every dataset record (corrupt ones are quarantined)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name in store.list_records(RECORD_KIND):
        for version in store.record_versions(RECORD_KIND, name):
            try:
                manifest = store.read_record(RECORD_KIND, name, version=version)
            except (ArtifactIntegrityError, ArtifactNotFoundError):
                continue
            out.setdefault(name, []).append({**manifest, "version": version})
    return out


def run_references(run: dict[str, Any],
                   manifests: dict[str, list[dict[str, Any]]]) -> set[tuple[str, str]]:
    """``(kind, key)`` of every artifact run ``run`` needs (its dataset's files excepted)."""
    refs = refs_in(run)
    versions = manifests.get(run.get("dataset", ""), [])
    try:
        anchors = dataset_ref(versions[-1], run["anchor_batches"])
        refs.add((VIEW_GROUPS, specs_key(anchors, params_of(run), 0, run["n_groups"])))
    except (IndexError, KeyError, TypeError, ValueError):
        pass  # its dataset is gone, or an old record: nothing more to keep
    return refs


def _dataset_references(versions: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {ref for manifest in versions for ref in refs_in(manifest.get("batches", []))}


def retention(runs: list[dict[str, Any]], keep_last: int,
              dataset: str | None = None) -> list[str]:
    """The runs a retention of the ``keep_last`` latest runs per dataset removes (of
    ``dataset`` only, if given), oldest first; ``runs`` as :func:`list_runs` orders them."""
    if keep_last < 1:
        raise ValueError(f"keep_last={keep_last} must be >= 1 (the latest run of a dataset is "
                         f"what the next recluster starts from).")
    by_dataset: dict[str, list[str]] = {}
    for run in runs:
        by_dataset.setdefault(run.get("dataset", ""), []).append(run["run_id"])
    return [run_id for name, ids in by_dataset.items() if dataset in (None, name)
            for run_id in ids[:-keep_last]]


def _garbage(usage: StoreUsage, needed: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    return {ref: size for ref, size in usage.artifacts.items()
            if ref[0] in PIPELINE_KINDS and ref not in needed}


def _old_leftovers(store: Any, usage: StoreUsage) -> dict[str, int]:
    now = time.time()
    return {rel: size for rel, size in usage.leftovers.items()
            if now - (store._modified(rel) or now) > LEFTOVER_AGE}


def collect_garbage(store: Any, *, dry_run: bool = False, keep_last: int | None = None,
                    dataset: str | None = None, drop_runs: tuple[str, ...] = (),
                    drop_datasets: tuple[str, ...] = ()) -> Collection:
    """Remove what no kept record needs, under the store's garbage-collection lock.

    Parameters
    ----------
    store : store
    dry_run : bool, default=False
        Say what would be removed; remove nothing.
    keep_last : int, optional
        Also remove the run records of each dataset (of ``dataset`` only, if given) but its
        ``keep_last`` latest ones (:func:`retention`).
    dataset : str, optional
    drop_runs, drop_datasets : tuple of str
        Records counted as removed already (what ``fastmice rm --dry-run`` would remove).

    Returns
    -------
    collection : Collection
        Nothing is removed (``busy`` names why) while a run or a registration writes to the
        store (:func:`storage.activity.live`).
    """
    if keep_last is not None:
        retention([], keep_last)  # a bad value is refused before anything is locked
    with store.lock(GC_LOCK):
        busy = [m.get("what", "?") for m in live(store, clean=not dry_run)]
        runs = list_runs(store)
        doomed = retention(runs, keep_last, dataset) if keep_last is not None else []
        gone = {*doomed, *drop_runs}
        manifests = {k: v for k, v in _manifests(store).items() if k not in drop_datasets}
        needed = {ref for versions in manifests.values() for ref in _dataset_references(versions)}
        for run in runs:
            if run["run_id"] not in gone:
                needed |= run_references(run, manifests)
        usage = store_usage(store)
        result = Collection(dry_run, doomed, _garbage(usage, needed),
                            _old_leftovers(store, usage), busy)
        result.kept_bytes = sum(usage.artifacts.values()) - sum(result.artifacts.values())
        if result.done:
            for run_id in doomed:
                remove_record(store, RUN, run_id)
            for kind, key in result.artifacts:
                remove_artifact(store, kind, key)
            for rel in result.leftovers:
                store._remove_dir(rel)
            forget_sources(store, keep=set(manifests))
            forget_answers(store, keep_runs={r["run_id"] for r in runs} - gone)
    return result


def store_report(store: Any) -> dict[str, Any]:
    """Bytes per kind, per dataset and per run, and what garbage collection would free.

    A run's ``bytes`` are those of every artifact it needs; its ``own_bytes`` those no other
    record needs (what ``fastmice rm RUN`` then ``fastmice gc`` frees). A dataset's
    ``data_bytes`` are its batches' files, ``run_bytes`` what its runs need.
    """
    usage = store_usage(store)
    manifests = _manifests(store)
    runs = list_runs(store)
    needs = {("run", r["run_id"]): run_references(r, manifests) for r in runs}
    needs.update({("dataset", n): _dataset_references(v) for n, v in manifests.items()})
    users = Counter(ref for refs in needs.values() for ref in refs)

    def size(refs: set[tuple[str, str]]) -> int:
        return sum(usage.artifacts.get(ref, 0) for ref in refs)

    run_rows = [{"run_id": r["run_id"], "dataset": r.get("dataset"), "kind": r.get("kind"),
                 "created": r.get("created"), "bytes": size(needs[("run", r["run_id"])]),
                 "own_bytes": size({ref for ref in needs[("run", r["run_id"])]
                                    if users[ref] == 1})} for r in runs]
    datasets = []
    for name, versions in sorted(manifests.items()):
        mine = [r for r in runs if r.get("dataset") == name]
        datasets.append({"dataset": name, "n_samples": versions[-1].get("n_samples"),
                         "batches": len(versions[-1].get("batches", [])), "runs": len(mine),
                         "data_bytes": size(needs[("dataset", name)]),
                         "run_bytes": size(set().union(*(needs[("run", r["run_id"])]
                                                         for r in mine)))})
    all_needed = set(users)
    return {"store": store.url, "total_bytes": usage.total,
            "kinds": {k: {"artifacts": n, "bytes": b} for k, (n, b) in usage.by_kind().items()},
            "datasets": datasets, "runs": run_rows,
            "unreferenced_bytes": sum(_garbage(usage, all_needed).values()),
            "records_bytes": sum(usage.records.values()), "quarantine_bytes": usage.quarantine,
            "leftover_bytes": sum(usage.leftovers.values()), "other_bytes": usage.other}


def plan_removal(store: Any, names: list[str],
                 with_runs: bool = False) -> tuple[list[str], list[str]]:
    """The runs and the datasets ``fastmice rm NAMES`` removes: ``(run ids, dataset names)``.

    Raises
    ------
    ValueError
        If a name is neither a run nor a dataset, is both, or is a dataset that has runs and
        ``with_runs`` is false (the message names them and the option): nothing is removed.
    """
    runs = list_runs(store)
    known = set(DatasetStore(store).list())
    doomed_runs: list[str] = []
    doomed_datasets: list[str] = []
    for name in names:
        validate_name(name, "run or dataset name")
        is_run, is_dataset = bool(store.record_version(RUN, name)), name in known
        if is_run and is_dataset:
            raise ValueError(f"{name!r} names both a run and a dataset in store {store.url}; "
                             f"nothing was removed.")
        if is_run:
            doomed_runs.append(name)
        elif is_dataset:
            theirs = [r["run_id"] for r in runs if r.get("dataset") == name]
            if theirs and not with_runs:
                listed = ", ".join(theirs[:3]) + (f" and {len(theirs) - 3} more"
                                                  if len(theirs) > 3 else "")
                raise ValueError(f"Dataset {name!r} has {len(theirs)} run(s) ({listed}); "
                                 f"`fastmice rm {name} --runs` removes them with it. Nothing "
                                 f"was removed.")
            doomed_datasets.append(name)
            doomed_runs.extend(theirs)
        else:
            raise ValueError(f"No run or dataset named {name!r} in store {store.url} "
                             f"(`fastmice store` lists them); nothing was removed.")
    return list(dict.fromkeys(doomed_runs)), list(dict.fromkeys(doomed_datasets))


def remove(store: Any, names: list[str], *, with_runs: bool = False,
           dry_run: bool = False) -> dict[str, Any]:
    """Remove the named runs and datasets (their records; ``fastmice gc`` then frees their
    files); with ``dry_run`` only say what would go.

    Returns
    -------
    result : dict
        ``runs`` and ``datasets`` removed (or that would be), ``dry_run``, and
        ``gc_frees_bytes``: what a garbage collection frees after it.
    """
    runs, datasets = plan_removal(store, names, with_runs)
    if not dry_run:
        with store.lock(GC_LOCK):
            for name in datasets:
                with store.lock(f"dataset-{name}"):
                    remove_record(store, RECORD_KIND, name)
            forget_sources(store, drop=set(datasets))
            for run_id in runs:
                remove_record(store, RUN, run_id)
            forget_answers(store, runs=set(runs))
    after = collect_garbage(store, dry_run=True, drop_runs=tuple(runs) if dry_run else (),
                            drop_datasets=tuple(datasets) if dry_run else ())
    return {"store": store.url, "dry_run": dry_run, "runs": runs, "datasets": datasets,
            "gc_frees_bytes": after.freed}
