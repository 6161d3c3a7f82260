"""The commands that check and tidy a store: ``fsck``, ``store``, ``rm`` and ``gc`` (no
Prefect).

``fastmice fsck`` verifies every checksum and reference (and with ``--repair`` mends what it
can: :mod:`storage.fsck`, lost labels tables rebuilt: :mod:`pipeline.commands.store`);
``fastmice store`` says what takes room (per kind, per dataset, per run); ``fastmice rm``
removes runs or datasets (their records: a dataset with runs only with ``--runs``);
``fastmice gc`` removes the files no kept record needs, optionally after a retention
(``--keep-last N`` runs per dataset). The logic is :mod:`pipeline.housekeeping`'s.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from cli.output import CommandError, Output, fsck_text
from pipeline.commands.store import fsck
from pipeline.housekeeping import collect_garbage, remove, store_report
from storage import open_store

__all__ = ["add_parsers", "cmd_fsck", "cmd_gc", "cmd_rm", "cmd_store", "size_text"]


def size_text(n_bytes: float) -> str:
    """``1536`` -> ``"1.5 kB"``, in powers of 1000."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n_bytes) < 1000 or unit == "GB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1000
    return f"{n_bytes:.1f} TB"  # pragma: no cover


def _store_text(report: dict[str, Any]) -> str:
    lines = [f"store      {report['store']}: {size_text(report['total_bytes'])}"]
    for kind, row in report["kinds"].items():
        lines.append(f"kind       {kind:<16} {size_text(row['bytes']):>10}  "
                     f"{row['artifacts']} artifacts")
    lines.append(f"other      records {size_text(report['records_bytes'])}, quarantine "
                 f"{size_text(report['quarantine_bytes'])}, leftovers of killed writes "
                 f"{size_text(report['leftover_bytes'])}, other {size_text(report['other_bytes'])}")
    for d in report["datasets"]:
        lines.append(f"dataset    {d['dataset']:<24} data {size_text(d['data_bytes']):>10}, "
                     f"{d['runs']} runs need {size_text(d['run_bytes'])} ({d['n_samples']} "
                     f"samples in {d['batches']} batches)")
    for r in report["runs"]:
        lines.append(f"run        {r['run_id']:<44} {r['kind'] or '?':<9} "
                     f"{size_text(r['bytes']):>10}, {size_text(r['own_bytes'])} its own")
    lines.append(f"garbage    {size_text(report['unreferenced_bytes'])} that no run or dataset "
                 f"needs (`fastmice gc` removes it)")
    return "\n".join(lines) + "\n"


def cmd_store(args: argparse.Namespace, output: Output) -> None:
    """Say what takes room in the store: per kind, per dataset, per run."""
    report = store_report(open_store(args.store))
    output.result(report, _store_text(report))


def cmd_rm(args: argparse.Namespace, output: Output) -> None:
    """Remove runs or datasets (their records); ``gc`` then frees their files."""
    store = open_store(args.store)
    try:
        result = remove(store, args.names, with_runs=args.runs, dry_run=args.dry_run)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    verb = "would remove" if args.dry_run else "removed"
    lines = [f"{verb:<10} dataset {name}" for name in result["datasets"]]
    lines += [f"{verb:<10} run {run_id}" for run_id in result["runs"]]
    lines.append(f"next       `fastmice gc` frees {size_text(result['gc_frees_bytes'])}")
    output.result(result, "\n".join(lines) + "\n")


def cmd_gc(args: argparse.Namespace, output: Output) -> int:
    """Remove what no kept record needs; status 1 if a live run prevented it."""
    store = open_store(args.store)
    try:
        result = collect_garbage(store, dry_run=args.dry_run, keep_last=args.keep_last,
                                 dataset=args.dataset)
    except ValueError as exc:
        raise CommandError(str(exc).replace("keep_last=", "--keep-last ")) from None
    verb = "would free" if not result.done else "freed"
    lines = [f"{'run':<10} {run_id} {'removed' if result.done else 'would be removed'}"
             for run_id in result.runs]
    by_kind = ", ".join(f"{kind} x{n}" for kind, n in result.to_dict()["by_kind"].items())
    lines.append(f"{verb:<10} {size_text(result.freed)}: {len(result.artifacts)} artifacts"
                 + (f" ({by_kind})" if by_kind else "") + f", {len(result.leftovers)} leftovers"
                 f"; {size_text(result.kept_bytes)} kept")
    if result.busy:
        lines.append(f"busy       nothing removed: {'; '.join(result.busy)} is writing to the "
                     f"store; run `fastmice gc` again when it has finished")
    output.result({"store": store.url, **result.to_dict()}, "\n".join(lines) + "\n")
    return 1 if result.busy and not args.dry_run else 0


def add_parsers(sub: argparse._SubParsersAction,
                finish: Callable[[argparse.ArgumentParser, Any], None]) -> None:
    """Declare ``fsck``, ``store``, ``rm`` and ``gc``; ``finish(parser, handler)`` adds the
    common options."""
    p = sub.add_parser("fsck", help="check (and repair) the store",
                       description="Verify every checksum and every reference of the store "
                                   "and say what was found; with --repair, set corrupt files "
                                   "aside in quarantine, rebuild lost labels tables from their "
                                   "consensus and remove old leftovers of killed writes. Exit "
                                   "status 1 if something still needs you (a damaged input "
                                   "batch: register the same data again).")
    p.add_argument("--repair", action="store_true",
                   help="repair what can be repaired (default: only report)")
    finish(p, cmd_fsck)
    p = sub.add_parser("store", help="what takes room in the store",
                       description="Sizes per artifact kind, per dataset and per run, and what "
                                   "`fastmice gc` would free.")
    finish(p, cmd_store)
    p = sub.add_parser("rm", help="remove runs or datasets",
                       description="Remove each NAME, a run or a dataset (their records; "
                                   "`fastmice gc` then frees their files). A dataset that has "
                                   "runs is removed only with --runs.")
    p.add_argument("names", nargs="+", metavar="RUN|DATASET")
    p.add_argument("--runs", action="store_true",
                   help="remove a dataset's runs with it")
    p.add_argument("--dry-run", action="store_true", help="say what would be removed")
    finish(p, cmd_rm)
    p = sub.add_parser("gc", help="remove what no kept run or dataset needs",
                       description="Remove every file of the pipeline that no kept run record "
                                   "and no dataset needs (a kept run's command then still "
                                   "computes nothing), and leftovers of killed writes; never "
                                   "while a run or a registration writes to the store.")
    p.add_argument("--dry-run", action="store_true", help="say what would be removed")
    p.add_argument("--keep-last", type=int, metavar="N",
                   help="first remove the runs of each dataset but its N latest")
    p.add_argument("--dataset", metavar="DATASET",
                   help="apply --keep-last to this dataset only")
    finish(p, cmd_gc)


def cmd_fsck(args: argparse.Namespace, output: Output) -> int:
    """Verify (and with ``--repair`` mend) the store; status 1 if something still needs you."""
    report = fsck(args.store, args.repair)
    output.result(report.to_dict(), fsck_text(report))
    return 1 if report.problems else 0
