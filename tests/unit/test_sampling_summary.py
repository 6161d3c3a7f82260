"""benchmarks/sampling.py's summary: the NMI mean over seeds and the gap to the exact path."""

import json

import pytest
from benchmark_loader import load_benchmark


def _sampling_module():
    return load_benchmark("sampling")


def _row(shape, setting, seed, nmi, n=100, k=4):
    return {"shape": shape, "n": n, "k": k, "seed": seed, "setting": setting, "nmi": nmi}


ROWS = [
    {"shape": "small", "n": 100, "k": 4, "seed": 0, "graphs_s": 1.0},  # a seed's header
    _row("small", "default", 0, 0.50), _row("small", "exact", 0, 0.60),
    _row("small", "default", 1, 0.70), _row("small", "exact", 1, 0.70),
    _row("small", "default", 2, 0.90),  # no exact on seed 2: kept out of the gap
    _row("skewed", "default", 0, 0.40),
]


def test_summary_means_over_seeds_and_gaps_over_common_seeds():
    summary = {(r["shape"], r["setting"]): r for r in _sampling_module().summarize(ROWS)}
    default = summary["small", "default"]
    assert default["seeds"] == [0, 1, 2]
    assert default["mean_nmi"] == pytest.approx(0.70)
    assert default["gap_to_exact"] == pytest.approx(-0.05)  # (-0.10 + 0.00) / 2
    assert summary["small", "exact"]["gap_to_exact"] == pytest.approx(0.0)
    assert summary["skewed", "default"]["gap_to_exact"] is None
    assert len(summary) == 3


def test_summary_command_reads_logs(tmp_path, capsys):
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n| a table line |\n")
    _sampling_module().main(["summary", str(log)])
    lines = capsys.readouterr().out.splitlines()
    assert "| small | 100 | 4 | default | 0,1,2 | 0.7000 | -5.00 |" in lines
    assert "| skewed | 100 | 4 | default | 0 | 0.4000 |  |" in lines


def test_stage_table_joins_the_graphs_stages_with_each_settings_own():
    graph = {"shape": "small", "n": 100, "k": 4, "seed": 0,
             "graphs_cpu_s": 11.0, "graph_stages": {"anchors": 2.0, "search": 9.0, "graph": 0.5}}
    default = {**_row("small", "default", 0, 0.5), "cpu_s": 5.5,
               "stages": {"eigen": 1.0, "kmeans": 3.0, "consensus/eigen": 0.5,
                          "consensus/kmeans": 0.7}}
    exact = {**_row("small", "exact", 0, 0.6), "stages": {"consensus/kmeans": 4.0}}
    other_seed = _row("small", "default", 1, 0.9)  # no graphs header: not in the table
    [entry] = _sampling_module().stage_table([graph, default, exact, other_seed])
    assert (entry["default_nmi"], entry["exact_nmi"]) == (0.5, 0.6)
    assert (entry["anchors"], entry["search"]) == (2.0, 9.0)
    assert (entry["default_kmeans"], entry["default_c_kmeans"]) == (3.0, 0.7)
    assert (entry["exact_kmeans"], entry["exact_c_kmeans"]) == (None, 4.0)
    assert (entry["graphs_cpu"], entry["default_cpu"], entry["exact_cpu"]) == (11.0, 5.5, None)
