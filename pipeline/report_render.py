"""A run report (:class:`Report`, built by :mod:`pipeline.report`) as HTML or as Markdown.

:func:`report_html` is one self-contained page: the figures are inline SVG, the style is
inline, there is no script and nothing is fetched, so it opens offline. :func:`report_markdown`
is the same report for a Prefect artifact: the same figures as ``data:`` images.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from html import escape

__all__ = ["Report", "Section", "report_html", "report_markdown"]


@dataclass
class Section:
    """One part of a report: a title, a figure (SVG text), a caption and a table."""

    title: str
    caption: str
    figure: str | None = None
    table: list[list[str]] = field(default_factory=list)


@dataclass
class Report:
    """A run's report: a title, a summary table (rows of two cells) and its sections."""

    title: str
    summary: list[list[str]]
    sections: list[Section]

_STYLE = """
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
       max-width: 1180px; margin: 24px auto; padding: 0 20px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin: 28px 0 6px; border-bottom: 1px solid #ddd; padding-bottom: 3px; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
th { background: #f4f4f4; }
figure { margin: 6px 0; }
figure svg { max-width: 100%; height: auto; }
p.caption { color: #444; margin: 4px 0; }
details summary { cursor: pointer; color: #555; font-size: 12px; }
footer { color: #888; font-size: 11px; margin-top: 32px; }
"""


def _table_html(rows: list[list[str]], header: bool) -> str:
    lines = []
    for i, row in enumerate(rows):
        tag = "th" if header and i == 0 else "td"
        lines.append("<tr>" + "".join(f"<{tag}>{escape(c)}</{tag}>" for c in row) + "</tr>")
    return "<table>\n" + "\n".join(lines) + "\n</table>"


def _section_html(index: int, section: Section) -> str:
    parts = [f'<section id="section-{index}">', f"<h2>{escape(section.title)}</h2>",
             f'<p class="caption">{escape(section.caption)}</p>']
    if section.figure:
        parts.append(f'<figure class="report-figure" data-title="{escape(section.title)}">'
                     f"{section.figure}</figure>")
    if section.table:
        parts.append(f"<details><summary>table ({len(section.table) - 1} rows)</summary>"
                     f"{_table_html(section.table, header=True)}</details>")
    parts.append("</section>")
    return "\n".join(parts)


def report_html(report: Report) -> str:
    """The report as one self-contained HTML page (UTF-8 text)."""
    body = "\n".join(_section_html(i, s) for i, s in enumerate(report.sections))
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{escape(report.title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
            f"<body>\n<h1>{escape(report.title)}</h1>\n"
            f"{_table_html(report.summary, header=False)}\n{body}\n"
            f"<footer>Made by fastmice (`fastmice report RUN`). Figures drawn with "
            f"matplotlib.</footer>\n</body>\n</html>\n")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table_markdown(rows: list[list[str]], header: bool) -> str:
    if not header:
        rows = [["", ""], *rows]
    lines = ["| " + " | ".join(_cell(c) for c in rows[0]) + " |",
             "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def report_markdown(report: Report, *, tables: bool = True) -> str:
    """The report as Markdown, its figures as ``data:image/svg+xml`` images (for a Prefect
    markdown artifact); ``tables=False`` leaves the sections' tables out."""
    parts = [f"# {report.title}", _table_markdown(report.summary, header=False)]
    for section in report.sections:
        parts += [f"## {section.title}", section.caption]
        if section.figure:
            data = base64.b64encode(section.figure.encode()).decode("ascii")
            parts.append(f"![{section.title}](data:image/svg+xml;base64,{data})")
        if tables and section.table:
            parts.append(_table_markdown(section.table, header=True))
    return "\n\n".join(parts) + "\n"
