"""The summary a command prints tells each view group's work once, in the progress bar's words."""

from __future__ import annotations

from cli.output import run_text


def _summary(kind: str, group_work: dict[str, int], work: dict[str, int],
             consensus_work: str) -> dict:
    return {"run_id": "r2", "kind": kind, "parent_run": "r1", "dataset": "demo",
            "n_samples": 800, "n_views": 3, "n_clusters": 4, "n_groups": 20,
            "groups_computed": sum(n for k, n in group_work.items() if k != "reused"),
            "groups_reused": group_work.get("reused", 0), "group_work": group_work,
            "consensus_work": consensus_work, "work": work, "seconds": 4.7,
            "labels_path": "/tmp/labels.parquet"}


def test_a_recluster_says_its_groups_work_one_way():
    text = run_text(_summary("recluster", {"extended": 20},
                             {"graphs_built": 0, "row_batches_computed": 20,
                              "row_batches_reused": 0, "base_clusterings": 20,
                              "consensus": 1}, "refined"))
    assert "20 view groups: 20 extended" in text
    assert "graphs: 0 built; rows of later batches: 20 placed; consensus refined" in text
    assert "computed" not in text and "reused" not in text  # no second count of the groups


def test_rows_reused_and_groups_of_several_kinds_are_each_said():
    text = run_text(_summary("recluster", {"extended": 18, "reused": 2},
                             {"graphs_built": 0, "row_batches_computed": 18,
                              "row_batches_reused": 2, "base_clusterings": 18,
                              "consensus": 1}, "refined"))
    assert "20 view groups: 18 extended, 2 reused" in text
    assert "rows of later batches: 18 placed, 2 reused" in text
    first = run_text(_summary("cluster", {"built": 20},
                              {"graphs_built": 20, "base_clusterings": 20, "consensus": 1},
                              "computed"))
    assert "20 view groups: 20 built" in first
    assert "work       graphs: 20 built; consensus computed" in first
    assert "rows of later batches" not in first
