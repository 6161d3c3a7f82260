"""The figures of a run report, drawn by matplotlib and returned as inline SVG text.

Each function takes the numbers of one figure (:mod:`pipeline.report`) and returns an
``<svg>`` element. Figures are drawn on :class:`matplotlib.figure.Figure` objects (no
pyplot, no global state, safe in threads). Dense layers (the map's points, heatmaps) are
rasterised inside the SVG, so that a figure of 20,000 points stays small; text, axes and
bars stay vectors. Each figure salts its SVG ids with its own name, so that several figures
inline in one page never share an id. Each figure is drawn once (its tight box is measured,
not drawn) and its SVG is stripped of indentation, comments and unused group ids.
"""

from __future__ import annotations

import io
import re

import matplotlib
import numpy as np
from matplotlib.colors import ListedColormap, hsv_to_rgb
from matplotlib.figure import Figure

__all__ = ["agreement", "cluster_sizes", "colour_table", "confusion", "k_scores",
           "label_change", "sample_map", "stages", "view_groups"]

_BLUE, _ORANGE, _GREY = "#4C72B0", "#DD8452", "#8C8C8C"
_DPI = 110
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_BETWEEN_TAGS = re.compile(r">\s+<")
_GROUP_ID = re.compile(r'<g id="[^"]*">')
_NEWLINES = re.compile(r"\s*\n\s*")


def colour_table(n: int) -> np.ndarray:
    """``n`` distinguishable colours (RGBA rows): tab10/tab20, then a golden-angle hue walk."""
    if n <= 10:
        return matplotlib.colormaps["tab10"](np.arange(n))
    if n <= 20:
        return matplotlib.colormaps["tab20"](np.arange(n))
    steps = np.arange(n)
    hsv = np.column_stack([(steps * 0.618033988749895) % 1.0, 0.55 + 0.15 * (steps % 3),
                           0.95 - 0.2 * (steps // 3 % 2)])
    return np.column_stack([hsv_to_rgb(hsv), np.ones(n)])


def _svg(fig: Figure, name: str) -> str:
    # The tight box is measured without a draw (savefig's bbox_inches="tight" draws the
    # figure twice); the markup is stripped of its indentation and comments, which the
    # figure does not need.
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"fastmice-{name}", "svg.fonttype": "path"}):
        box = fig.get_tightbbox().padded(matplotlib.rcParams["savefig.pad_inches"])
        fig.savefig(buffer, format="svg", dpi=_DPI, bbox_inches=box,
                    metadata={"Date": None, "Title": name})
    text = buffer.getvalue()
    return _minify(text[text.index("<svg"):])


def _minify(svg: str) -> str:
    """Matplotlib's SVG without comments, the ids of its groups (nothing refers to them) and
    the whitespace between and inside elements (path data keeps one space between numbers)."""
    svg = _GROUP_ID.sub("<g>", _COMMENT.sub("", svg))
    return _NEWLINES.sub(" ", _BETWEEN_TAGS.sub("><", svg)).strip()


def _ticks(ax, axis: str, n: int, names: list[str] | None = None, most: int = 30) -> None:
    """Label every position up to ``most``, else about ``most`` of them."""
    step = max(1, int(np.ceil(n / most)))
    positions = np.arange(0, n, step)
    labels = [names[p] if names else str(p) for p in positions]
    if axis == "x":
        ax.set_xticks(positions, labels, rotation=90 if n > 12 else 0, fontsize=7)
    else:
        ax.set_yticks(positions, labels, fontsize=7)


def _legend_above(ax) -> None:
    ax.legend(frameon=False, fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0),
              ncol=2)


def cluster_sizes(sizes: np.ndarray) -> str:
    """Bars of the samples per cluster."""
    fig = Figure(figsize=(9, 3.2))
    ax = fig.add_subplot()
    ax.bar(np.arange(len(sizes)), sizes, color=_BLUE, width=0.8)
    ax.axhline(sizes.sum() / len(sizes), color=_GREY, lw=1, ls="--", label="equal sizes")
    ax.set_xlabel("cluster")
    ax.set_ylabel("samples")
    _ticks(ax, "x", len(sizes))
    _legend_above(ax)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, "cluster-sizes")


#: Up to this many clusters (or classes) a panel has a legend; up to LABELLED_MOST each is
#: named at its points' median instead; beyond, the caption says colours repeat hues.
LEGEND_MOST, LABELLED_MOST = 20, 100


def _scatter(ax, xy: np.ndarray, codes: np.ndarray, colours: np.ndarray, title: str,
             names: dict[int, str]) -> None:
    size = 4.0 if len(xy) <= 5000 else 1.5
    # Rasterised without anti-aliasing: the points' few distinct colours compress well.
    ax.scatter(xy[:, 0], xy[:, 1], c=colours[codes], s=size, linewidths=0, alpha=0.7,
               rasterized=True, antialiased=False)
    ax.set_title(title, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_aspect("equal", adjustable="datalim")
    if len(names) <= LEGEND_MOST:
        for code, name in names.items():
            ax.scatter([], [], color=colours[code], s=20, label=name)
        ax.legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  handletextpad=0.2, borderaxespad=0.2)
    elif len(names) <= LABELLED_MOST:
        for code, name in names.items():
            at = np.median(xy[codes == code], axis=0)
            ax.annotate(name, at, fontsize=6, ha="center", va="center",
                        bbox={"boxstyle": "round,pad=0.1", "fc": "white", "alpha": 0.6,
                              "lw": 0})


def sample_map(xy: np.ndarray, clusters: np.ndarray, cluster_names: dict[int, str],
               classes: np.ndarray | None = None,
               class_names: dict[int, str] | None = None) -> str:
    """The samples' 2-D map coloured by cluster and, when ``classes`` is given, by class,
    each panel with its legend (a name per colour).

    Parameters
    ----------
    xy : ndarray of shape (n_points, 2)
    clusters : ndarray of shape (n_points,)
        Colour index of each point's cluster (that of its matched class, when known).
    cluster_names : dict
        The name of each colour index in ``clusters`` (e.g. ``{3: "cluster 0"}``).
    classes : ndarray of shape (n_points,), optional
        Colour index of each point's true class.
    class_names : dict, optional
        The name of each colour index in ``classes``.
    """
    panels = 1 if classes is None else 2
    fig = Figure(figsize=(6.2 * panels, 5.0))
    axes = fig.subplots(1, panels, squeeze=False)[0]
    # One colour table for both panels, so that a cluster and its class share a colour.
    n_colours = 1 + int(max(clusters.max(initial=0),
                            0 if classes is None else classes.max(initial=0)))
    colours = colour_table(n_colours)
    _scatter(axes[0], xy, clusters, colours, "by cluster", cluster_names)
    if classes is not None:
        _scatter(axes[1], xy, classes, colours, "by true class", class_names or {})
    return _svg(fig, "sample-map")


def _heatmap(ax, values: np.ndarray, cmap: str, vmax: float | None = None):
    return ax.imshow(values, cmap=cmap, vmin=0, vmax=vmax, aspect="auto",
                     interpolation="nearest", rasterized=True)


def confusion(table: np.ndarray, classes: list[str], clusters: list[str]) -> str:
    """Counts of each true class (rows) in each cluster (columns), shaded by row share."""
    n_rows, n_columns = table.shape
    fig = Figure(figsize=(min(12, 3 + 0.35 * n_columns), min(10, 2.2 + 0.3 * n_rows)))
    ax = fig.add_subplot()
    share = table / np.maximum(table.sum(axis=1, keepdims=True), 1)
    image = _heatmap(ax, share, "Blues", 1.0)
    if n_rows * n_columns <= 400:
        for (i, j), count in np.ndenumerate(table):
            if count:
                ax.text(j, i, f"{count}", ha="center", va="center", fontsize=6,
                        color="white" if share[i, j] > 0.5 else "black")
    _ticks(ax, "x", n_columns, clusters)
    _ticks(ax, "y", n_rows, classes)
    ax.set_xlabel("cluster")
    ax.set_ylabel("true class")
    fig.colorbar(image, ax=ax, label="share of the class", fraction=0.04)
    return _svg(fig, "confusion")


def agreement(nmi: np.ndarray, with_consensus: np.ndarray,
              with_truth: np.ndarray | None) -> str:
    """NMI heatmap between base clusterings, and bars of each one's NMI with the consensus
    (and with the true classes)."""
    m = len(with_consensus)
    fig = Figure(figsize=(11, 4.2))
    left, right = fig.subplots(1, 2, width_ratios=[1, 1.3])
    image = _heatmap(left, nmi, "viridis", 1.0)
    _ticks(left, "x", m)
    _ticks(left, "y", m)
    left.set_xlabel("base clustering (view group)")
    left.set_ylabel("base clustering (view group)")
    left.set_title("NMI between base clusterings", fontsize=10)
    fig.colorbar(image, ax=left, fraction=0.046)
    width = 0.4 if with_truth is not None else 0.8
    right.bar(np.arange(m) - (width / 2 if with_truth is not None else 0), with_consensus,
              width, color=_BLUE, label="with the consensus")
    if with_truth is not None:
        right.bar(np.arange(m) + width / 2, with_truth, width, color=_ORANGE,
                  label="with the true classes")
    right.set_ylim(0, 1.2)
    right.set_yticks(np.linspace(0, 1, 6))
    right.set_xlabel("base clustering (view group)")
    right.set_ylabel("NMI")
    right.set_title("Each base clustering's NMI", fontsize=10)
    _ticks(right, "x", m)
    right.legend(frameon=False, fontsize=8, loc="upper center", ncol=2)
    right.spines[["top", "right"]].set_visible(False)
    return _svg(fig, "agreement")


def view_groups(share: np.ndarray, base_k: np.ndarray) -> str:
    """Per view group, the share of each view's features it takes (blank: view not in the
    group), beside its base clustering's number of clusters."""
    m, n_views = share.shape
    fig = Figure(figsize=(10, min(9, 1.6 + 0.22 * m)))
    left, right = fig.subplots(1, 2, width_ratios=[max(1.0, 0.4 * n_views), 2], sharey=True)
    image = left.imshow(np.ma.masked_invalid(share), cmap=ListedColormap(
        matplotlib.colormaps["Greens"](np.linspace(0.25, 1, 64))), vmin=0, vmax=1,
        aspect="auto", interpolation="nearest")
    if m * n_views <= 400:
        for (g, v), value in np.ndenumerate(share):
            if np.isfinite(value):
                left.text(v, g, f"{value:.0%}", ha="center", va="center", fontsize=6)
    _ticks(left, "x", n_views)
    _ticks(left, "y", m)
    left.set_xlabel("view")
    left.set_ylabel("view group")
    left.set_title("feature share per view", fontsize=10)
    fig.colorbar(image, ax=left, fraction=0.06)
    right.barh(np.arange(m), base_k, color=_BLUE)
    right.set_xlabel("base k")
    right.set_title("clusters of its base clustering", fontsize=10)
    right.spines[["top", "right"]].set_visible(False)
    return _svg(fig, "view-groups")


def stages(seconds: dict[str, float]) -> str:
    """Horizontal bars of the seconds spent in each stage."""
    names = list(seconds) or ["(none recorded)"]
    values = [seconds[n] for n in seconds] or [0.0]
    fig = Figure(figsize=(8, 0.9 + 0.32 * len(names)))
    ax = fig.add_subplot()
    ax.barh(np.arange(len(names)), values, color=_BLUE)
    ax.set_yticks(np.arange(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    for i, value in enumerate(values):
        ax.text(value, i, f" {value:.2f} s", va="center", fontsize=7)
    ax.set_xlabel("seconds (summed over tasks)")
    ax.set_xlim(0, max(values) * 1.2 + 1e-9)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, "stages")


def label_change(before: np.ndarray, after: np.ndarray) -> str:
    """Cluster sizes before and after, each later cluster beside the earlier one it matches
    (unmatched later clusters last)."""
    n = len(after)
    fig = Figure(figsize=(9, 3.2))
    ax = fig.add_subplot()
    positions = np.arange(n)
    ax.bar(positions[:len(before)] - 0.2, before, 0.4, color=_GREY, label="before")
    ax.bar(positions + 0.2, after, 0.4, color=_BLUE, label="after")
    ax.set_xlabel("cluster (of the earlier run; unmatched new clusters last)")
    ax.set_ylabel("samples")
    _ticks(ax, "x", n)
    _legend_above(ax)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, "label-change")


def k_scores(candidates: np.ndarray, scores: np.ndarray, chosen: int) -> str:
    """The score of every candidate k (``n_clusters="auto"``) against k, the chosen one
    marked; k on a log axis from 10 candidates up."""
    fig = Figure(figsize=(8, 3))
    ax = fig.add_subplot()
    ax.plot(candidates, scores, color=_BLUE, linewidth=1, marker="." if len(scores) <= 60
            else None)
    best = int(np.flatnonzero(np.asarray(candidates) == chosen)[0])
    ax.plot([chosen], [scores[best]], "o", color=_ORANGE, label=f"chosen k = {chosen}")
    if len(candidates) >= 10:
        ax.set_xscale("log")
    ax.set_xlabel("candidate k")
    ax.set_ylabel("score")
    _legend_above(ax)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, "k-scores")
