"""A run's report end to end: a real flow run and an extend of it, the Prefect artifact,
``fastmice report`` (without Prefect), and the page opened in headless Chromium.

The screenshot is saved as ``tests/artifacts/report-page.png`` (git-ignored; the path is
printed), to be looked at.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report.headless_chromium import Chromium, find_chromium

pytestmark = pytest.mark.flows

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("FASTMICE_TEST_ARTIFACTS", ROOT / "tests" / "artifacts"))
K, M, ANCHORS, SEED = 4, 5, 60, 3
TITLES = ["Cluster sizes", "Map of the samples", "Confusion matrix",
          "Agreement between base clusterings", "View groups", "Time per stage"]

NO_PREFECT = """
import sys
from cli.main import main
status = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("prefect", "tasks", "flows"))
assert not loaded, loaded
sys.exit(status)
"""

# Per figure: its title, rendered size, number of drawn SVG elements, and for each raster
# layer inside it (the map's points, heatmaps) how many of its pixels are not white.
FIGURES_JS = """
(async () => {
  const inked = async (href) => {
    const img = new Image();
    img.src = href;
    try { await img.decode(); } catch (e) { return -1; }
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
    const context = canvas.getContext('2d');
    context.drawImage(img, 0, 0);
    const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let i = 0; i < pixels.length; i += 4) {
      if (pixels[i + 3] > 0 && (pixels[i] < 250 || pixels[i + 1] < 250 || pixels[i + 2] < 250))
        count++;
    }
    return count;
  };
  const out = [];
  for (const figure of document.querySelectorAll('figure.report-figure')) {
    const svg = figure.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const images = svg ? [...svg.querySelectorAll('image')] : [];
    const rasters = await Promise.all(images.map(
      im => inked(im.getAttribute('xlink:href') || im.getAttribute('href'))));
    out.push({title: figure.dataset.title, width: box.width, height: box.height,
              marks: svg ? svg.querySelectorAll('path, use, rect, text').length : 0, rasters});
  }
  return out;
})()
"""


@pytest.fixture
def extended_run(prefect_api, registered):
    """A cluster run of "blobs" and an extend of it by 3 groups: (store, first, extended)."""
    from flows.pipeline import cluster_flow, extend_flow

    first = cluster_flow(dataset="blobs", n_clusters=K, n_groups=M, random_state=SEED,
                         store_url=registered.url, n_anchors=ANCHORS)
    extended = extend_flow(run_id=first["run_id"], n_groups=3, store_url=registered.url)
    return registered, first, extended


def _report_artifact(key: str) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    assert found, f"no Prefect artifact {key!r}"
    return max(found, key=lambda a: a.created).data


def test_flow_runs_carry_the_report_as_a_prefect_artifact(extended_run):
    _, first, extended = extended_run
    markdown = _report_artifact("fastmice-blobs-report")
    assert f"# fastmice run {extended['run_id']}" in markdown
    # The run at a glance: the figures of the results; the ensemble's diagnostics are left
    # to `fastmice report` (the groups and stages stay, as tables).
    assert markdown.count("](data:image/svg+xml;base64,") == 3 + 1
    assert f"## Changes against {first['run_id']}" in markdown
    assert "## Agreement between base clusterings" not in markdown
    assert "## View groups" in markdown and "| group | views |" in markdown
    assert f"`fastmice report {extended['run_id']}`" in markdown


def _report_without_prefect(store, run_id: str, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PREFECT_API_URL", None)
    result = subprocess.run([sys.executable, "-c", NO_PREFECT, "report", run_id, "--out",
                             str(out), "--store", store.url], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert str(out) in result.stdout


def test_report_page_renders_every_figure_in_headless_chromium(extended_run, tmp_path):
    store, first, extended = extended_run
    page = tmp_path / "report.html"
    _report_without_prefect(store, extended["run_id"], page)
    html = page.read_text()
    # Self-contained: nothing to run, nothing to fetch (XML namespaces are names, not links).
    assert "<script" not in html
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    binary = find_chromium()
    if binary is None:
        pytest.skip("headless Chromium is not installed (scripts/setup.sh installs Debian's "
                    "`chromium` when it runs as root with apt-get; elsewhere install it)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with Chromium(binary, tmp_path) as browser:
        browser.open(page)
        figures = browser.evaluate(FIGURES_JS)
        shot = browser.screenshot(ARTIFACTS / "report-page.png")
        errors, requests = browser.errors, browser.requests
    print(f"\nreport screenshot: {shot}")
    assert [f["title"] for f in figures] == [*TITLES, f"Changes against {first['run_id']}"]
    for figure in figures:
        assert figure["width"] > 300 and figure["height"] > 100, figure
        assert figure["marks"] > 20, figure
        assert all(inked > 50 for inked in figure["rasters"]), figure
    assert len(figures[1]["rasters"]) == 2  # the map's points, by cluster and by class
    assert errors == []
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    assert shot.stat().st_size > 50_000


def test_report_refuses_bad_requests_in_one_line(extended_run, tmp_path, capsys, cli_env):
    from cli.main import main

    store, first, _ = extended_run
    cases = [(["report", "no-such-run"], "Unknown run 'no-such-run'"),
             (["report", first["run_id"], "--out", str(tmp_path / "r.txt")],
              "expected an .html file name"),
             (["report", first["run_id"], "--out", str(tmp_path / "no" / "r.html")],
              "does not exist"),
             (["report", first["run_id"], "--max-points", "1", "--out",
               str(tmp_path / "r.html")], "--max-points 1 must be >= 2")]
    for argv, expected in cases:
        assert main([*argv, "--store", store.url]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0], err
    assert not (tmp_path / "r.html").exists()


def test_report_rebuilds_lost_labels_and_names_a_lost_base_clustering(extended_run, tmp_path,
                                                                      capsys, cli_env):
    import shutil

    from cli.main import main
    from pipeline.runs import read_run

    store, first, _ = extended_run
    record = read_run(store, first["run_id"])
    shutil.rmtree(Path(record["labels_path"]).parent)
    out = tmp_path / "r.html"
    assert main(["report", first["run_id"], "--out", str(out), "--store", store.url]) == 0
    assert "rebuilt from the stored consensus" in capsys.readouterr().err
    assert out.stat().st_size > 10_000

    base = record["groups"][1]["labels"]
    shutil.rmtree(Path(store.local_path(store.ref(base["kind"], base["key"]))).parent)
    assert main(["report", first["run_id"], "--out", str(out), "--store", store.url]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be reported" in err[0] and "Rerun the command" in err[0]


def test_a_run_without_labels_has_no_confusion_matrix_and_a_bounded_map(prefect_api, store,
                                                                        blobs):
    from flows.pipeline import cluster_flow
    from pipeline.ingest import register_batch
    from pipeline.report import build_report

    register_batch(store, "nolabels", blobs[0], None, mode="create")
    run = cluster_flow(dataset="nolabels", n_clusters=K, n_groups=M, random_state=SEED,
                       store_url=store.url, n_anchors=ANCHORS)
    report = build_report(store, run["run_id"])
    assert [s.title for s in report.sections] == [t for t in TITLES if t != "Confusion matrix"]
    assert ["scores", "no ground truth"] in report.summary
    assert report.sections[1].figure.count("<image") == 1  # by cluster only
    bounded = build_report(store, run["run_id"], max_points=100)
    assert bounded.sections[1].caption.startswith("100 of 600 samples (drawn at random)")



def test_a_flow_run_with_metric_auto_in_its_record_labels_new_samples(extended_run, blobs):
    """A run started by a flow (a deployment's) keeps ``metric="auto"`` in its record; its
    groups were drawn with the metric chosen on the data, and so are they again here."""
    from fastmice.metrics import clustering_scores
    from pipeline.predict import load_model, predict_labels
    from pipeline.runs import read_run
    from storage import labels_from_table

    store, first, _ = extended_run
    record = read_run(store, first["run_id"])
    assert set(record["params"]["metric"]) == {"auto"}
    model = load_model(store, first["run_id"])
    assert "auto" not in model.params.metric
    _, columns, _ = labels_from_table(store.get(record["labels"]))
    Xs, _ = blobs
    assert clustering_scores(columns["label"], predict_labels(model, Xs, None))["ari"] >= 0.9
