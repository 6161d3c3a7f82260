"""``python -m cli.serve``: serve the inbox-recluster (scheduled) and cluster-on-demand
deployments from one long-lived process (:func:`flows.deployments.serve_deployments`).

The ensemble options are those of ``fastmice cluster`` and are bound into the inbox
deployment for the dataset's first run; later runs reuse the latest run's parameters.
Scheduling needs ``PREFECT_API_URL`` (a server from ``infra/local_server.sh``).
"""

from __future__ import annotations

import argparse
import sys

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
    p.add_argument("--grace", type=float, default=300.0, metavar="SECONDS",
                   help="how long to wait for a Prefect server that does not answer (at "
                        "start, or lost while serving) before stopping with status 3 "
                        "(default 300)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Serve both deployments until interrupted; the exit status (0 stopped, 1 an error,
    3 the server lost for good), each said in one line."""
    args = _parse_args(argv)
    from prefect.settings import PREFECT_API_URL

    api_url = PREFECT_API_URL.value()
    if not api_url:
        print("fastmice serve: PREFECT_API_URL is not set: schedules need a Prefect server "
              "(infra/serve.sh starts one, or infra/local_server.sh)", file=sys.stderr)
        return 1
    from flows.deployments import serve_deployments
    from storage import open_store

    schedule = ({"interval": args.interval} if args.interval is not None
                else {"cron": args.cron})
    parameters = {**ensemble_values(args), "dask_address": args.dask,
                  "keep_runs": args.keep_runs}
    return serve_deployments(args.inbox, args.dataset, open_store(args.store).url, parameters,
                             schedule, api_url, args.grace)


if __name__ == "__main__":
    sys.exit(main())
