"""The report's SVG figures: compact markup, the same picture as matplotlib's own output."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from pipeline import report_figures as figures

_SIZE = re.compile(r'<svg[^>]*width="([\d.]+)pt" height="([\d.]+)pt"')


def _agreement() -> str:
    nmi = np.random.default_rng(0).uniform(size=(20, 20))
    return figures.agreement(nmi, nmi[0], nmi[1])


def _matplotlib_tight_svg() -> str:
    """What matplotlib writes for the same figure with bbox_inches="tight" (two draws)."""
    captured = {}

    def keep(fig, name):
        buffer = io.StringIO()
        with matplotlib.rc_context({"svg.hashsalt": f"fastmice-{name}",
                                    "svg.fonttype": "path"}):
            fig.savefig(buffer, format="svg", dpi=figures._DPI, bbox_inches="tight",
                        metadata={"Date": None, "Title": name})
        captured["svg"] = buffer.getvalue()
        return ""

    original, figures._svg = figures._svg, keep
    try:
        _agreement()
    finally:
        figures._svg = original
    return captured["svg"]


def test_figures_keep_the_tight_box_of_matplotlib():
    ours = [float(v) for v in _SIZE.search(_agreement()).groups()]
    tight = [float(v) for v in _SIZE.search(_matplotlib_tight_svg()).groups()]
    assert np.allclose(ours, tight, atol=2.0), (ours, tight)


def test_minified_svg_keeps_every_drawn_element():
    full = _matplotlib_tight_svg()
    small = _agreement()
    assert len(small) < 0.9 * len(full)
    assert "<!--" not in small and "\n" not in small
    assert not re.search(r'<g id="[^"]*">', small)

    def drawn(svg: str) -> dict[str, int]:
        root = ET.fromstring(svg[svg.index("<svg"):])
        tags = [e.tag.split("}")[-1] for e in root.iter()]
        return {t: tags.count(t) for t in ("path", "use", "image", "rect", "clipPath")}

    assert drawn(small) == drawn(full)
    # every reference still has its target
    ids = set(re.findall(r' id="([^"]+)"', small))
    refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', small))
    assert refs and refs <= ids


def test_minify_collapses_whitespace_but_not_numbers():
    svg = '<svg>\n  <!-- 3 -->\n  <g id="x1">\n   <path d="M 1 2 \nL 3 4 \nz"/>\n  </g>\n</svg>\n'
    assert figures._minify(svg) == '<svg><g><path d="M 1 2 L 3 4 z"/></g></svg>'


def test_the_map_points_are_drawn_without_anti_aliasing():
    fig = Figure()
    ax = fig.add_subplot()
    figures._scatter(ax, np.zeros((3, 2)), np.arange(3), figures.colour_table(3), "t",
                     {c: str(c) for c in range(3)})
    points = ax.collections[0]
    assert points.get_rasterized() and not points.get_antialiased().any()
