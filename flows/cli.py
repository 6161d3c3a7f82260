"""The ``fastmice`` command: cluster multi-view data through the resumable Prefect pipeline.

Subcommands: ``cluster``, ``extend``, ``append``, ``recluster``, ``runs``, ``show``; each has
``--help``. Human-readable output and a progress bar over view groups by default; with
``--json``, exactly one JSON object on stdout (Prefect's and Dask's logs go to stderr).

Every input is validated before anything is written, so an unreadable file, a wrong layout,
mismatched views, a bad parameter or an unknown run exits with status 1 and a one-line
message, and leaves the store as it was. ``--verbose`` shows Prefect's logs; set
``FASTMICE_DEBUG=1`` to get tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["main"]

#: Exit status of every reported error (argparse usage errors exit with 2).
ERROR_STATUS = 1


class CommandError(Exception):
    """An error reported as one line, without a traceback."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ---------------------------------------------------------------------------- output


class _Output:
    """Stdout for the result only: everything else written to fd 1 goes to stderr.

    Prefect's ephemeral server, Dask workers and libraries may print; while a command runs,
    file descriptor 1 points at stderr, and the result is written to the real stdout last.
    """

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self._stdout: int | None = None

    @contextlib.contextmanager
    def redirected(self) -> Iterator[None]:
        sys.stdout.flush()
        self._stdout = os.dup(1)
        os.dup2(2, 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(self._stdout, 1)
            os.close(self._stdout)
            self._stdout = None

    def result(self, obj: dict[str, Any], text: str) -> None:
        """Write the result: ``obj`` as one JSON line, or ``text``."""
        out = json.dumps(obj, default=str) + "\n" if self.json_mode else text
        data = out.encode()
        fd = self._stdout if self._stdout is not None else 1
        sys.stdout.flush()
        while data:
            data = data[os.write(fd, data):]


class _ProgressBar:
    """A progress bar over view groups on stderr (one line, redrawn; lines if not a TTY)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self._last = -1

    def __call__(self, steps: int, n_steps: int, groups: int, n_groups: int) -> None:
        width = 30
        fraction = steps / n_steps if n_steps else 1.0
        tenth = int(fraction * 10)
        if not self.tty and tenth == self._last:
            return
        self._last = tenth
        filled = round(fraction * width)
        line = (f"view groups [{'#' * filled}{'.' * (width - filled)}] "
                f"{groups}/{n_groups} done ({100 * fraction:3.0f}% of {n_steps} steps)")
        sys.stderr.write("\r" + line if self.tty else line + "\n")
        if self.tty and steps == n_steps:
            sys.stderr.write("\n")
        sys.stderr.flush()


# ---------------------------------------------------------------------------- helpers


def _message(exc: BaseException) -> str:
    """One line naming the problem."""
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    text = " ".join(str(text).split()) or type(exc).__name__
    if isinstance(exc, FileNotFoundError) and exc.filename and exc.filename not in text:
        text = f"{text}: {exc.filename}"
    return text


_OPTIONS = {"n_clusters": "--k", "n_groups": "--groups", "seed": "--seed", "metric": "--metric",
            "n_anchors": "--anchors", "n_neighbors": "--neighbors"}


def _option_names(message: str) -> str:
    """A parameter error worded with the command's option names (``n_clusters=1`` -> ``--k 1``)."""
    for param, option in _OPTIONS.items():
        message = re.sub(rf"\b{param}=", f"{option} ", message)
    return message


def _configure_environment(verbose: bool) -> None:
    """Quiet, robust defaults for Prefect and Dask (set before they are imported)."""
    level = "INFO" if verbose else "CRITICAL"
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_TASK_RUNS_LEVEL", level)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # The embedded API server starts in a subprocess; 20 s is tight on a loaded machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "info" if verbose else "error")


def _check_out(path: str | None) -> Path | None:
    if path is None:
        return None
    out = Path(path)
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise CommandError(f"--out {path}: expected a .parquet or .csv file name.")
    if out.is_dir():
        raise CommandError(f"--out {path} is a directory; give a file name.")
    if not out.absolute().parent.is_dir():
        raise CommandError(f"--out {path}: folder {out.absolute().parent} does not exist.")
    return out


def _check_dask(address: str | None) -> None:
    """Fail early (before anything is written) if the Dask option cannot work."""
    if address is None:
        return
    try:
        import prefect_dask  # noqa: F401
    except ImportError:
        raise CommandError('--dask needs prefect-dask: pip install -e ".[dask]"') from None
    if address == "local":
        return
    match = re.fullmatch(r"(?:tcp://)?\[?([^\]/]+?)\]?:(\d+)", address)
    if not match:
        raise CommandError(f"--dask {address!r}: expected 'local' or a scheduler address "
                           f"such as tcp://127.0.0.1:8786.")
    try:
        socket.create_connection((match[1], int(match[2])), timeout=5).close()
    except OSError as exc:
        raise CommandError(f"--dask {address}: cannot reach the Dask scheduler "
                           f"({exc.strerror or exc}).") from None


def _task_runner(address: str | None) -> Any:
    from prefect.task_runners import ThreadPoolTaskRunner

    if address is None:
        return ThreadPoolTaskRunner(max_workers=2)
    from prefect_dask import DaskTaskRunner

    if address == "local":
        return DaskTaskRunner(cluster_kwargs={"n_workers": 2, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    return DaskTaskRunner(address=address if "://" in address else f"tcp://{address}")


_api_start: threading.Thread | None = None


def _start_embedded_api() -> None:
    """Start Prefect's embedded API server now, in the background, if no server is set.

    The server is a subprocess that takes ~10 s to be ready; started while the data are
    copied into the store, it is ready sooner. Call it while file
    descriptor 1 is redirected: the server inherits it. :func:`_run_flow` waits for it.
    """
    global _api_start
    # Imported here, in the main thread: importing prefect from two threads at once can
    # hand one of them a partially initialised module.
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return

    def start() -> None:
        with contextlib.suppress(Exception):  # the flow run starts it again and reports why
            SubprocessASGIServer().start()

    _api_start = threading.Thread(target=start, name="fastmice-api-start", daemon=True)
    _api_start.start()


def _run_flow(flow_name: str, args: argparse.Namespace, output: _Output,
              **parameters: Any) -> dict[str, Any]:
    """Run one of the pipeline's flows in this process, with the progress bar."""
    if _api_start is not None:
        _api_start.join()  # the flow must not find a server that is started but not ready
    from flows import pipeline
    from flows.progress import listen

    flow = getattr(pipeline, flow_name).with_options(task_runner=_task_runner(args.dask))
    bar = (lambda *a: None) if output.json_mode else _ProgressBar()
    with listen(bar):
        return flow(**parameters)


def _write_out(store: Any, summary: dict[str, Any], out: Path | None) -> None:
    """Copy the run's labels table to ``--out`` (Parquet or CSV) and point labels_path at it."""
    if out is None:
        return
    from tasks.runs import read_run

    table = store.get(read_run(store, summary["run_id"])["labels"])
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    if out.suffix.lower() == ".csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(table.replace_schema_metadata(None), tmp)
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, tmp)
    os.replace(tmp, out)
    summary["labels_path"] = str(out.absolute())


def _run_text(summary: dict[str, Any]) -> str:
    work = summary.get("work") or {}
    lines = [
        f"run        {summary['run_id']} ({summary['kind']}"
        + (f" of {summary['parent_run']})" if summary.get("parent_run") else ")"),
        f"dataset    {summary['dataset']}: {summary['n_samples']} samples, "
        f"{summary['n_views']} views",
        f"ensemble   k={summary['n_clusters']}, {summary['n_groups']} view groups: "
        f"{summary['groups_computed']} computed, {summary['groups_reused']} reused",
        f"work       {work.get('graphs_built', 0)} graphs built, "
        f"{work.get('row_batches_computed', 0)} batch rows placed "
        f"({work.get('row_batches_reused', 0)} reused), "
        f"{work.get('base_clusterings', 0)} base clusterings, "
        f"consensus {'computed' if work.get('consensus') else 'reused'}",
        f"time       {summary['seconds']:.1f} s in the flow",
        f"labels     {summary['labels_path']}",
    ]
    if summary.get("scores"):
        scores = summary["scores"]
        lines.append("scores     " + "  ".join(f"{name} {scores[key]:.4f}" for key, name in (
            ("nmi", "NMI"), ("ari", "ARI"), ("acc", "ACC"), ("purity", "purity"))))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- commands


def _cmd_cluster(args: argparse.Namespace, output: _Output) -> None:
    from storage import open_store, validate_name
    from tasks.ingest import default_dataset_name

    out = _check_out(args.out)
    store = open_store(args.store)
    name = args.name if args.name is not None else default_dataset_name(args.data)
    validate_name(name, "dataset name (--name)")
    with output.redirected():
        _cluster(args, output, store, name, out)


def _cluster(args: argparse.Namespace, output: _Output, store: Any, name: str,
             out: Path | None) -> None:
    from tasks.ingest import read_data, register_batch
    from tasks.params import ensemble_params

    Xs, labels = read_data(args.data)
    k = args.k
    if k is None:
        if labels is None:
            raise CommandError("--k is required: the data carry no labels to count the "
                               "classes of.")
        k = len(set(labels.tolist()))
    try:
        ensemble_params(n_samples=Xs[0].shape[0], n_views=len(Xs), n_clusters=k,
                        n_groups=args.groups, seed=args.seed, metric=args.metric,
                        n_anchors=args.anchors, n_neighbors=args.neighbors)
    except (ValueError, TypeError) as exc:
        raise CommandError(_option_names(str(exc))) from None
    _check_dask(args.dask)
    if args.run_name is not None:
        from tasks.runs import new_run_id

        new_run_id(store, name, args.run_name)
    _start_embedded_api()  # the input is valid: start Prefect while the data are stored
    _, registered = register_batch(store, name, Xs, labels, mode="create")
    del Xs
    summary = _run_flow("cluster_flow", args, output, dataset=name, n_clusters=k,
                        n_groups=args.groups, seed=args.seed, metric=args.metric,
                        store_url=store.url, run_name=args.run_name,
                        n_anchors=args.anchors, n_neighbors=args.neighbors)
    summary["dataset_registered"] = registered
    _write_out(store, summary, out)
    output.result(summary, _run_text(summary))


def _cmd_extend(args: argparse.Namespace, output: _Output) -> None:
    from storage import open_store
    from tasks.runs import plan_extend

    out = _check_out(args.out)
    store = open_store(args.store)
    try:
        plan_extend(store, args.run, args.groups)
    except (ValueError, TypeError) as exc:
        raise CommandError(_option_names(str(exc))) from None
    _check_dask(args.dask)
    with output.redirected():
        summary = _run_flow("extend_flow", args, output, run_id=args.run,
                            n_groups=args.groups, store_url=store.url)
        _write_out(store, summary, out)
        output.result(summary, _run_text(summary))


def _cmd_recluster(args: argparse.Namespace, output: _Output) -> None:
    from storage import open_store
    from tasks.runs import new_run_id, plan_recluster

    out = _check_out(args.out)
    store = open_store(args.store)
    plan_recluster(store, args.dataset, args.refresh_anchors)
    if args.run_name is not None:
        new_run_id(store, args.dataset, args.run_name)
    _check_dask(args.dask)
    with output.redirected():
        summary = _run_flow("recluster_flow", args, output, dataset=args.dataset,
                            store_url=store.url, refresh_anchors=args.refresh_anchors,
                            run_name=args.run_name)
        _write_out(store, summary, out)
        output.result(summary, _run_text(summary))


def _cmd_append(args: argparse.Namespace, output: _Output) -> None:
    from storage import open_store, validate_name
    from tasks.ingest import read_data, register_batch

    store = open_store(args.store)
    validate_name(args.dataset, "dataset name")
    from storage.datasets import DatasetStore

    if not DatasetStore(store).exists(args.dataset):
        raise CommandError(f"Unknown dataset {args.dataset!r} in store {store.url}; create it "
                           f"with `fastmice cluster DATA --name {args.dataset}`.")
    Xs, labels = read_data(args.data)
    manifest, written = register_batch(store, args.dataset, Xs, labels, mode="append")
    batch = manifest["batches"][-1]
    result = {"dataset": args.dataset, "appended": written, "batch_id": batch["batch_id"],
              "n_new_samples": int(Xs[0].shape[0]), "n_batches": len(manifest["batches"]),
              "n_samples": manifest["n_samples"], "fingerprint": manifest["fingerprint"],
              "store": store.url}
    text = (f"dataset    {args.dataset}: batch {batch['batch_id']} with "
            f"{result['n_new_samples']} samples appended; {result['n_samples']} samples in "
            f"{result['n_batches']} batches\nnext       fastmice recluster {args.dataset}\n"
            if written else
            f"dataset    {args.dataset}: these samples are already stored (nothing appended); "
            f"{result['n_samples']} samples in {result['n_batches']} batches\n")
    output.result(result, text)


def _cmd_runs(args: argparse.Namespace, output: _Output) -> None:
    from storage import open_store
    from tasks.results import run_summary
    from tasks.runs import list_runs

    store = open_store(args.store)
    runs = [{**run_summary(r), "created": r["created"]}
            for r in list_runs(store, args.dataset)]
    rows = [f"{'run':<48} {'kind':<9} {'dataset':<16} {'N':>7} {'k':>3} {'M':>3} "
            f"{'new':>3} {'NMI':>6} {'sec':>7}  created"]
    for r in runs:
        nmi = f"{r['scores']['nmi']:.4f}" if r.get("scores") else "-"
        rows.append(f"{r['run_id']:<48} {r['kind']:<9} {r['dataset']:<16} {r['n_samples']:>7} "
                    f"{r['n_clusters']:>3} {r['n_groups']:>3} {r['groups_computed']:>3} "
                    f"{nmi:>6} {r['seconds']:>7.1f}  {r['created'][:19]}")
    text = "\n".join(rows) + "\n" if runs else f"no runs in store {store.url}\n"
    output.result({"store": store.url, "runs": runs}, text)


def _cmd_show(args: argparse.Namespace, output: _Output) -> None:
    from storage import open_store
    from tasks.results import run_summary
    from tasks.runs import read_run

    store = open_store(args.store)
    record = read_run(store, args.run)
    text = _run_text(run_summary(record)) + (
        f"created    {record['created']}\n"
        f"batches    {record['batches']} (anchors from {record['anchor_batches']})\n"
        f"params     {json.dumps(record['params'])}\n"
        f"groups     " + " ".join(f"{g['group']}{'*' if g['computed'] else ''}"
                                  for g in record["groups"]) + "   (* computed in this run)\n"
        f"sizes      {record['cluster_sizes']}\n")
    output.result(record, text)


# ---------------------------------------------------------------------------- parser


def _common(parser: argparse.ArgumentParser, *, dask: bool = False) -> None:
    parser.add_argument("--store", metavar="URL",
                        help="artifact store: a folder or an fsspec URL (default: "
                             "$FASTMICE_STORE or ./.fastmice)")
    if dask:
        parser.add_argument("--dask", metavar="ADDRESS|local",
                            help="run the view groups on Dask: a scheduler address, or "
                                 "'local' for a LocalCluster (default: 2 threads)")
        parser.add_argument("--out", metavar="PATH",
                            help="also write the labels (sample_id, label) to this .parquet "
                                 "or .csv file")
    parser.add_argument("--json", action="store_true",
                        help="print exactly one JSON object on stdout")
    parser.add_argument("--verbose", action="store_true", help="show Prefect's logs")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fastmice`` command."""
    parser = _Parser(prog="fastmice",
                     description="Cluster multi-view data with FastMICE through a resumable "
                                 "Prefect pipeline that reuses every stored intermediate. "
                                 "Run `fastmice COMMAND --help` for a command's options.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)

    p = sub.add_parser("cluster", help="cluster data with a new ensemble",
                       description="Register DATA as a dataset and cluster it with a new "
                                   "FastMICE ensemble. DATA: one .npz (view0, view1, ..., "
                                   "optional labels), one .mat, one .npy/.parquet/.csv file "
                                   "per view, or a directory of view*.npy files with an "
                                   "optional labels.npy. Labels are used only for scores and "
                                   "the default k.")
    p.add_argument("data", nargs="+", metavar="DATA")
    p.add_argument("--k", type=int, help="number of clusters (default: number of classes "
                                         "in the data's labels)")
    p.add_argument("--groups", type=int, default=20, metavar="M",
                   help="number of view groups (default: 20)")
    p.add_argument("--metric", default="euclidean",
                   help="euclidean or cosine, or one per view, comma-separated "
                        "(default: euclidean)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="random_state of the ensemble (default: 0)")
    p.add_argument("--name", metavar="DATASET",
                   help="dataset name (default: from the file name)")
    p.add_argument("--anchors", type=int, default=1000, metavar="P",
                   help="anchors per view group (default: 1000)")
    p.add_argument("--neighbors", type=int, default=5, metavar="K",
                   help="nearest anchors per sample and view group (default: 5)")
    p.add_argument("--run-name", metavar="RUN", help="run id (default: generated)")
    _common(p, dask=True)
    p.set_defaults(handler=_cmd_cluster)

    p = sub.add_parser("extend", help="add view groups to a run's ensemble",
                       description="Add DM view groups to the ensemble of RUN (the old groups "
                                   "are reused) and compute a new consensus, as a new run.")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--groups", type=int, required=True, metavar="DM",
                   help="number of view groups to add")
    _common(p, dask=True)
    p.set_defaults(handler=_cmd_extend)

    p = sub.add_parser("append", help="add a batch of new samples to a dataset",
                       description="Store DATA (same views and features as the dataset) as "
                                   "the next batch of DATASET; `fastmice recluster DATASET` "
                                   "then labels every sample.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("data", nargs="+", metavar="DATA")
    _common(p)
    p.set_defaults(handler=_cmd_append)

    p = sub.add_parser("recluster", help="relabel a dataset after new batches arrived",
                       description="Cluster every sample of DATASET with its latest "
                                   "ensemble: the old batches' graph rows are reused and new "
                                   "batches are placed with the ensemble's anchors (or new "
                                   "anchors with --refresh-anchors).")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--refresh-anchors", action="store_true",
                   help="draw new anchors from every batch (recomputes every group)")
    p.add_argument("--run-name", metavar="RUN", help="run id (default: generated)")
    _common(p, dask=True)
    p.set_defaults(handler=_cmd_recluster)

    p = sub.add_parser("runs", help="list the runs", description="List the runs of the store.")
    p.add_argument("--dataset", metavar="DATASET", help="only the runs of this dataset")
    _common(p)
    p.set_defaults(handler=_cmd_runs)

    p = sub.add_parser("show", help="show one run", description="Show the record of RUN.")
    p.add_argument("run", metavar="RUN")
    _common(p)
    p.set_defaults(handler=_cmd_show)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fastmice`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    _configure_environment(args.verbose)
    output = _Output(args.json)
    started = time.time()
    try:
        args.handler(args, output)
    except KeyboardInterrupt:
        print("fastmice: interrupted; rerun the same command to resume.", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("FASTMICE_DEBUG"):
            raise
        message = _message(exc)
        if output.json_mode:
            output.result({"error": message, "type": type(exc).__name__}, "")
        print(f"fastmice {args.command}: error: {message}", file=sys.stderr)
        return ERROR_STATUS
    finally:
        if os.environ.get("FASTMICE_DEBUG"):
            print(f"fastmice: {time.time() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
