"""A run's report: what a run gives back, to look at, in one self-contained HTML file.

:func:`build_report` reads a run from the store (its record, labels table, base
clusterings, consensus, the dataset's labels when known, and the run it started from) and
draws its figures (:mod:`pipeline.report_figures`); :func:`write_report` writes the HTML
(:mod:`pipeline.report_render`). ``fastmice report RUN`` and the flows' Prefect artifact
both come from here. The cost is linear in the number of samples: the map draws at most
``max_points`` of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import fastmice
from pipeline import report_figures as figures
from pipeline.keys import dataset_ref
from pipeline.params import drawn_params
from pipeline.report_render import Report, Section, report_html
from pipeline.report_stats import (
    compare_labels,
    consensus_map,
    contingency,
    matched_columns,
    nmi_matrix,
)
from pipeline.runs import read_run
from storage import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    DatasetStore,
    labels_from_table,
    write_file_atomic,
)

__all__ = ["MAX_MAP_POINTS", "Report", "Section", "build_report", "write_report"]

#: Most samples drawn on the 2-D map.
MAX_MAP_POINTS = 20_000


@dataclass
class _Run:
    """What a report reads of a run."""

    record: dict[str, Any]
    ids: np.ndarray
    labels: np.ndarray
    base: np.ndarray
    consensus: fastmice.ConsensusPartition
    truth: np.ndarray | None


def _truth(store: Any, record: dict[str, Any]) -> np.ndarray | None:
    """The dataset's labels of the run's samples, or None unless every batch has them."""
    datasets = DatasetStore(store)
    manifest = datasets.manifest(record["dataset"])
    known = {b["batch_id"]: b for b in manifest["batches"]}
    if any(known.get(b, {}).get("labels") is None for b in record["batches"]):
        return None
    return np.asarray(datasets.load_labels(record["dataset"], batches=record["batches"]))


def _read(store: Any, run_id: str) -> _Run:
    record = read_run(store, run_id)
    try:
        ids, columns, _ = labels_from_table(store.get(record["labels"]))
        base = np.column_stack([np.asarray(store.get(g["labels"]), dtype=np.int32)
                                for g in record["groups"]])
        consensus = fastmice.ConsensusPartition.from_arrays(store.get(record["consensus"]))
    except (ArtifactNotFoundError, ArtifactIntegrityError) as exc:
        raise type(exc)(f"Run {run_id} cannot be reported: {exc} Rerun the command that made "
                        f"the run (it recomputes what is missing).") from None
    return _Run(record, np.asarray(ids), np.asarray(columns["label"], dtype=np.int64), base,
                consensus, _truth(store, record))


def _summary(record: dict[str, Any]) -> list[list[str]]:
    scores = record.get("scores")
    rows = [["run", record["run_id"]], ["kind", record["kind"]]]
    if record.get("parent_run"):
        rows.append(["started from", record["parent_run"]])
    rows += [["dataset", f"{record['dataset']} (batches {record['batches']})"],
             ["samples", f"{record['n_samples']:,}"], ["views", str(record["n_views"])],
             ["clusters (k)", str(record["n_clusters"])],
             ["view groups", f"{record['n_groups']} ({record['groups_computed']} computed, "
                             f"{record['groups_reused']} reused)"],
             ["scores", "no ground truth" if not scores else
              ", ".join(f"{name} {value:.4f}" for name, value in scores.items())],
             ["created", f"{record['created']} ({record['seconds']:.1f} s)"],
             ["random_state", f"{record['params'].get('random_state')} "
                              f"(root seed {record.get('root_seed')})"],
             ["code version", str(record.get("code_version"))]]
    return rows


def _sizes_section(run: _Run) -> Section:
    sizes = np.bincount(run.labels, minlength=run.record["n_clusters"])
    return Section("Cluster sizes",
                   f"{len(sizes)} clusters of {sizes.min():,} to {sizes.max():,} samples "
                   f"(median {int(np.median(sizes)):,}).",
                   figures.cluster_sizes(sizes))


def _map_section(run: _Run, colours: np.ndarray, max_points: int) -> Section:
    n = len(run.labels)
    rng = np.random.default_rng(run.record.get("root_seed", 0))
    rows = np.arange(n) if n <= max_points else np.sort(rng.choice(n, max_points, False))
    xy = consensus_map(run.consensus, run.base[rows])
    truth = None if run.truth is None else contingency_codes(run.truth)[rows]
    clusters = np.unique(run.labels[rows])
    cluster_names = {int(colours[c]): f"cluster {c}" for c in clusters}
    class_names = None if run.truth is None else {
        code: f"class {name}" for code, name in enumerate(np.unique(run.truth))}
    caption = (f"{len(rows):,} of {n:,} samples"
               f"{' (drawn at random)' if len(rows) < n else ''}, placed by the first two "
               f"principal axes of their consensus embedding (the consensus graph's "
               f"eigenvectors), coloured by cluster"
               + (" and, beside it, by true class (a cluster takes the colour of the class "
                  "it matches)" if truth is not None else "")
               + (". Each cluster is named at its samples' median."
                  if figures.LEGEND_MOST < len(clusters) <= figures.LABELLED_MOST else
                  f". {len(clusters)} clusters: too many to name, colours repeat hues."
                  if len(clusters) > figures.LABELLED_MOST else "."))
    return Section("Map of the samples", caption,
                   figures.sample_map(xy, colours[run.labels[rows]], cluster_names, truth,
                                      class_names))


def contingency_codes(labels: np.ndarray) -> np.ndarray:
    """Labels as codes ``0..n-1`` in sorted order (as :func:`contingency` counts them)."""
    return np.unique(labels, return_inverse=True)[1].reshape(-1)


def _confusion_section(run: _Run, match: np.ndarray) -> Section:
    table = contingency(run.truth, run.labels)
    order = np.argsort(np.where(match >= 0, match, len(match) + 1), kind="stable")
    classes = np.unique(run.truth)
    correct = int(table[match[match >= 0], np.flatnonzero(match >= 0)].sum())
    return Section("Confusion matrix",
                   f"True classes (rows) against clusters (columns, each beside the class it "
                   f"matches): {correct:,} of {len(run.labels):,} samples "
                   f"({correct / len(run.labels):.1%}) in the cluster matched to their class.",
                   figures.confusion(table[:, order], [str(c) for c in classes],
                                     [str(c) for c in order]))


def _agreement_section(run: _Run) -> Section:
    extra = [run.labels] + ([] if run.truth is None else [contingency_codes(run.truth)])
    nmi = nmi_matrix(np.column_stack([run.base, *extra]))
    m = run.base.shape[1]
    with_consensus = nmi[:m, m]
    with_truth = None if run.truth is None else nmi[:m, m + 1]
    off = nmi[:m, :m][~np.eye(m, dtype=bool)]
    caption = (f"NMI between the {m} base clusterings (mean {off.mean():.3f}"
               if m > 1 else "One base clustering") + (
        f"), and of each with the consensus (mean {with_consensus.mean():.3f})"
        + ("" if with_truth is None else
           f" and with the true classes (mean {with_truth.mean():.3f}, consensus "
           f"{nmi[m, m + 1]:.3f})") + ".")
    return Section("Agreement between base clusterings", caption,
                   figures.agreement(nmi[:m, :m], with_consensus, with_truth))


def _groups_section(store: Any, record: dict[str, Any], draw: bool = True) -> Section:
    anchors = dataset_ref(DatasetStore(store).manifest(record["dataset"]),
                          record["anchor_batches"])
    params = drawn_params(store, fastmice.EnsembleParams.from_dict(record["params"]), anchors)
    specs = fastmice.draw_view_groups(anchors["n_features"], anchors["n_samples"], params,
                                      seed=params.root_seed, start=0, n_groups=params.n_groups)
    share = np.full((len(specs), record["n_views"]), np.nan)
    for s in specs:
        for view, columns in zip(s.views, s.feature_indices, strict=True):
            share[s.group_index, view] = len(columns) / anchors["n_features"][view]
    base_k = np.array([s.n_base_clusters for s in specs])
    table = [["group", "views", "feature share", "base k", "anchors / view", "metric"]]
    table += [[str(s.group_index), " ".join(map(str, s.views)),
               " ".join(f"{share[s.group_index, v]:.0%}" for v in s.views),
               str(s.n_base_clusters), str(s.n_anchors), " ".join(sorted(set(s.metrics)))]
              for s in specs]
    return Section("View groups",
                   f"{len(specs)} groups: each takes a random subset of the {record['n_views']} "
                   f"views and a random share of each view's features, and cuts its graph "
                   f"into its own number of clusters (base k {base_k.min()} to "
                   f"{base_k.max()}).", figures.view_groups(share, base_k) if draw else None,
                   table)


def _k_section(run: _Run) -> Section | None:
    """How k was chosen (``n_clusters="auto"``): the score of every candidate."""
    choice = run.consensus.k_choice
    if choice is None:
        return None
    ranked = choice.ranked(10)
    return Section("Choosing k",
                   f"k was chosen from the data: {choice.n_clusters}, the best of "
                   f"{len(choice.candidates)} candidates (2 to {int(choice.candidates[-1])}). "
                   f"The score of a candidate k is {choice.rule or 'an eigengap score'} "
                   "(docs/quality.md, \"Choosing k\"). The ten best:",
                   figures.k_scores(choice.candidates, choice.scores, choice.n_clusters),
                   [["k", "score"]] + [[str(k), f"{score:.4f}"] for k, score in ranked])


def _stages_section(record: dict[str, Any], draw: bool = True) -> Section:
    stages = {name: float(s) for name, s in record.get("stages", {}).items()}
    timings = record.get("timings", {})
    table = [["stage", "seconds"]] + [[n, f"{s:.2f}"] for n, s in stages.items()]
    return Section("Time per stage",
                   f"Seconds per stage, summed over every task (thread-seconds; the groups "
                   f"ran side by side). Wall clock: groups {timings.get('groups', 0):.1f} s, "
                   f"consensus and results {timings.get('consensus', 0):.1f} s, whole run "
                   f"{record['seconds']:.1f} s.", figures.stages(stages) if draw else None,
                   table)


def _change_section(store: Any, run: _Run) -> Section | None:
    parent_id = run.record.get("parent_run")
    if not parent_id:
        return None
    try:
        parent = read_run(store, parent_id)
        before_ids, columns, _ = labels_from_table(store.get(parent["labels"]))
    except (KeyError, ValueError) as exc:
        return Section(f"Changes against {parent_id}",
                       f"Run {parent_id} cannot be read ({exc}).")
    change = compare_labels(run.ids, run.labels, np.asarray(before_ids),
                            np.asarray(columns["label"], dtype=np.int64))
    share = change.n_moved / change.n_common if change.n_common else 0.0
    return Section(f"Changes against {parent_id}",
                   f"This {run.record['kind']} started from run {parent_id}: "
                   f"{change.n_moved:,} of the {change.n_common:,} samples of both runs "
                   f"({share:.1%}) moved to a cluster other than the one matched to theirs, "
                   f"and {change.n_new:,} samples are new.",
                   figures.label_change(change.sizes_before, change.sizes_after))


def build_report(store: Any, run_id: str, *, max_points: int = MAX_MAP_POINTS,
                 full: bool = True) -> Report:
    """The report of run ``run_id`` (see the module docstring for what it shows).

    ``full=False`` gives the run at a glance, as the flows attach it to every run: the
    ensemble's diagnostics (the agreement between base clusterings, the figures of the view
    groups and of the time per stage: half the drawing, and the NMI of every pair of
    clusterings) are left to ``fastmice report RUN``; the groups and stages stay as tables.

    Raises
    ------
    ArtifactNotFoundError, ArtifactIntegrityError
        If the run, or an artifact it needs, is missing or corrupt.
    """
    run = _read(store, run_id)
    match = None if run.truth is None else matched_columns(contingency(run.truth, run.labels))
    colours = np.arange(run.record["n_clusters"]) if match is None else np.where(
        match >= 0, match, np.unique(run.truth).size + np.cumsum(match < 0) - 1)
    sections = [_sizes_section(run), _map_section(run, colours, max_points)]
    k_section = _k_section(run)
    if k_section is not None:
        sections.append(k_section)
    if match is not None:
        sections.append(_confusion_section(run, match))
    if full:
        sections.append(_agreement_section(run))
    sections += [_groups_section(store, run.record, full), _stages_section(run.record, full)]
    change = _change_section(store, run)
    if change is not None:
        sections.append(change)
    return Report(f"fastmice run {run_id}", _summary(run.record), sections)


def write_report(store: Any, run_id: str, path: str | os.PathLike[str], *,
                 max_points: int = MAX_MAP_POINTS) -> Path:
    """Write run ``run_id``'s report as one self-contained HTML file, atomically; return
    its absolute path."""
    html = report_html(build_report(store, run_id, max_points=max_points)).encode()
    out = Path(path)
    write_file_atomic(out, lambda f: f.write(html))
    return out.absolute()
