"""``python -m cli.serve``: serve the inbox-recluster (scheduled) and cluster-on-demand
deployments from one long-lived process (:func:`flows.deployments.serve_deployments`).

The ensemble options are those of ``fastmice cluster`` and are bound into the inbox
deployment for the dataset's first run; later runs reuse the latest run's parameters.
Scheduling needs ``PREFECT_API_URL`` (a server from ``infra/local_server.sh``).
"""

from __future__ import annotations

import argparse

from cli.options import add_ensemble_options, ensemble_values

__all__ = ["main"]


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m cli.serve",
        description="Serve the inbox-recluster (scheduled) and cluster-on-demand deployments.")
    p.add_argument("--inbox", required=True, help="folder of incoming .npz batch files")
    p.add_argument("--dataset", required=True, help="dataset name in the store")
    add_ensemble_options(p, k_help="k of the first run, or 'auto' (required until the "
                                      "dataset has a run)")
    p.add_argument("--store", default=None,
                   help="store path or URL (default: $FASTMICE_STORE or ./.fastmice)")
    p.add_argument("--dask", default=None, metavar="ADDRESS",
                   help="Dask scheduler (tcp://host:8786) for the view groups")
    p.add_argument("--keep-runs", type=int, default=None, metavar="N",
                   help="retention: after each inbox run keep the dataset's N latest runs and "
                        "remove the files no kept run needs (default: keep every run)")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--cron", default="*/30 * * * *",
                      help='schedule of the inbox run (UTC; default "*/30 * * * *")')
    when.add_argument("--interval", type=float, default=None, metavar="SECONDS",
                      help="run the inbox every SECONDS instead of on a cron schedule")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Serve both deployments until interrupted."""
    from flows.deployments import serve_deployments
    from storage import open_store

    args = _parse_args(argv)
    schedule = ({"interval": args.interval} if args.interval is not None
                else {"cron": args.cron})
    parameters = {**ensemble_values(args), "dask_address": args.dask,
                  "keep_runs": args.keep_runs}
    serve_deployments(args.inbox, args.dataset, open_store(args.store).url, parameters,
                      schedule)


if __name__ == "__main__":
    main()
