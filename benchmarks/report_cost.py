"""What a run's report costs: CPU-seconds and bytes of ``build_report`` + ``report_markdown``.

The flows end every run with this (``tasks.results.report_artifact``); ``fastmice report
RUN`` writes the same report as HTML. For a stored run, in one process, prints the CPU time
of importing the drawing code (matplotlib), of the first report (cold: fonts, caches), the
median of ``--repeats`` further reports, and the sizes of the Prefect artifact (Markdown)
and of the HTML file. CPU time (``time.process_time``) rather than wall time, as the
machine is shared::

    fastmice cluster ../shared/datasets/Hdigit.npz --store /tmp/store
    python benchmarks/report_cost.py /tmp/store RUN_ID
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", help="the artifact store (path or URL)")
    parser.add_argument("run", help="the run id")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from storage import open_store

    start = time.process_time()
    from pipeline.report import build_report
    from pipeline.report_render import report_html, report_markdown
    imports = time.process_time() - start
    store = open_store(args.store)
    seconds = []
    for _ in range(1 + args.repeats):
        start = time.process_time()
        report = build_report(store, args.run)
        markdown = report_markdown(report)
        seconds.append(time.process_time() - start)
    html = report_html(report)
    print(f"| run | {args.run} |\n|---|---|\n"
          f"| import (matplotlib and the report modules), CPU s | {imports:.2f} |\n"
          f"| first report (cold), CPU s | {seconds[0]:.2f} |\n"
          f"| report, median of {args.repeats}, CPU s | {statistics.median(seconds[1:]):.2f} |\n"
          f"| artifact (Markdown), kB | {len(markdown.encode()) / 1000:.0f} |\n"
          f"| HTML, kB | {len(html.encode()) / 1000:.0f} |\n"
          + "".join(f"| figure: {s.title}, kB | {len((s.figure or '').encode()) / 1000:.0f} |\n"
                    for s in report.sections))


if __name__ == "__main__":
    main()
