"""A real S3-compatible store: moto's S3 server over HTTP on 127.0.0.1, reached through s3fs.

``cluster``, the same ``cluster`` again and ``extend`` on ``s3://`` give the labels and the
reuse they give on a local store (and the library's labels); a corrupt object is set aside
and recomputed; ``runs`` and ``fsck`` work there; no command prints the secret key.
(The ``s3`` extra installs s3fs, the ``test`` extra moto's server: ``scripts/setup.sh``.)
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import numpy as np
import pytest
from reliability_kit import (
    GROUPS,
    OPTIONS,
    labels_of,
    library_ids,
    make_data,
    one_json,
    run_cli,
)

from pipeline.keys import BASE_LABELS, RUN
from storage import open_store

pytestmark = [pytest.mark.flows, pytest.mark.slow]

SECRET = f"fastmice-test-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("s3"))


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """moto's S3 server on a free port of 127.0.0.1: the environment that reaches it, and
    its log (a line per request)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                   "-p", str(port)], stdout=out, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            break
        except OSError:
            assert server.poll() is None and time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)
    yield {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_ACCESS_KEY_ID": "fastmice-test",
           "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": "us-east-1"}, log
    server.terminate()
    server.wait(timeout=20)


@pytest.fixture(scope="module")
def s3(s3_server):
    """The environment that reaches moto's S3 server."""
    return s3_server[0]


def _sequence(store, data, api_url, env, outputs):
    """cluster, the same cluster again, extend by 2 groups: their JSON summaries."""
    def run(args):
        result = run_cli(args, api_url, **env)
        outputs.append(result.stdout + result.stderr)
        return one_json(result.stdout)

    first = run(["cluster", data["tiny"], "--store", store, *OPTIONS, "--json"])
    again = run(["cluster", data["tiny"], "--store", store, *OPTIONS, "--json"])
    extended = run(["extend", first["run_id"], "--groups", 2, "--store", store, "--json"])
    return [first, again, extended]


def _reuse(summary):
    return summary["groups_computed"], summary["groups_reused"], summary["work"]


def test_cluster_rerun_extend_on_s3_as_on_a_local_store(s3, data, prefect_api, tmp_path,
                                                        monkeypatch, battery):
    from s3fs import S3FileSystem

    for name, value in s3.items():
        monkeypatch.setenv(name, value)
    S3FileSystem.clear_instance_cache()  # fsspec caches filesystems; the endpoint is bound in
    outputs: list[str] = []
    url = f"s3://fastmice-{uuid.uuid4().hex[:8]}/store"
    local = _sequence(tmp_path / "local", data, prefect_api, {}, outputs)
    remote = _sequence(url, data, prefect_api, s3, outputs)
    local_store, remote_store = open_store(tmp_path / "local"), open_store(url)
    same_reuse = [_reuse(a) for a in local] == [_reuse(b) for b in remote]
    expected = [data["labels"], data["labels"], data["labels_extended"]]
    same_labels = all(
        np.array_equal(labels_of(remote_store, r["run_id"]), labels_of(local_store, lo["run_id"]))
        and np.array_equal(labels_of(remote_store, r["run_id"]),
                           library_ids(remote_store, r["run_id"], want))
        for lo, r, want in zip(local, remote, expected, strict=True))
    listed = one_json(run_cli(["runs", "--store", url, "--json"], **s3).stdout)["runs"]
    fsck = run_cli(["fsck", "--store", url], **s3, check=False)
    outputs += [fsck.stdout, fsck.stderr]
    ok = same_reuse and same_labels and len(listed) == 3 and fsck.returncode == 0
    battery.record("s3", "`cluster`, the same `cluster`, `extend --groups 2` on s3:// (moto "
                   "server over HTTP, s3fs)", "the reuse and labels of a local store",
                   f"groups computed {[r['groups_computed'] for r in remote]} (local "
                   f"{[r['groups_computed'] for r in local]}); labels "
                   f"{'identical' if same_labels else 'DIFFERENT'}; runs lists {len(listed)}; "
                   f"fsck status {fsck.returncode}", ok)

    record = remote_store.read_record(RUN, remote[0]["run_id"])
    key = record["groups"][0]["labels"]["key"]
    path = f"{remote_store.root}/{BASE_LABELS}/{key[:2]}/{key}/data.npy"
    damaged = bytearray(remote_store.fs.cat(path))
    damaged[-5] ^= 0x01
    remote_store.fs.pipe(path, bytes(damaged))
    healed = one_json(run_cli(["cluster", data["tiny"], "--store", url, *OPTIONS, "--json"],
                              prefect_api, **s3).stdout)
    ok2 = (healed["groups_computed"] == 1 and len(remote_store.quarantined()) == 1
           and np.array_equal(labels_of(remote_store, healed["run_id"]), data["labels"]))
    battery.record("s3", "a corrupt base clustering object on s3://: the same `cluster`",
                   "set aside, that group recomputed, identical labels",
                   f"{healed['groups_computed']} of {GROUPS} groups computed", ok2)
    ok3, got = _rm_and_gc(url, remote, data, prefect_api, s3, outputs)
    battery.record("s3", "`rm` of the extended run, `gc`, then the first `cluster` again on "
                   "s3://", "its files freed; the kept run computes nothing", got, ok3)
    secret_shown = any(SECRET in text for text in outputs)
    battery.record("s3", "the secret key in any command's output", "never",
                   "never" if not secret_shown else "PRINTED", not secret_shown)
    assert ok and ok2 and ok3 and not secret_shown, (local, remote, fsck.stdout, got)


def _rm_and_gc(url, remote, data, api_url, s3, outputs):
    """Remove the extended run, collect the garbage, run the first command again."""
    def run(args, api=None):
        result = run_cli([*args, "--store", url, "--json"], api, **s3)
        outputs.append(result.stdout + result.stderr)
        return one_json(result.stdout)

    own = {r["run_id"]: r["own_bytes"] for r in run(["store"])["runs"]}
    run(["rm", remote[2]["run_id"]])
    gc = run(["gc"])
    again = run(["cluster", data["tiny"], *OPTIONS], api_url)
    ok = (gc["done"] and gc["freed_bytes"] == own[remote[2]["run_id"]] > 0
          and again["groups_computed"] == 0 and not again["work"]["consensus"])
    return ok, (f"gc freed {gc['freed_bytes']} bytes (the run's own {own[remote[2]['run_id']]})"
                f"; the cluster again computed {again['groups_computed']} groups")


def _requests(log) -> int:
    """Requests the server has logged so far (it logs each once it has answered)."""
    count, settled = -1, 0
    while settled < 3:  # the last line may come just after the answer
        now = sum(1 for line in log.read_text(errors="replace").splitlines()
                  if re.search(r'"(GET|HEAD|PUT|POST|DELETE) /', line))
        settled = settled + 1 if now == count else 0
        count = now
        time.sleep(0.1)
    return count


#: The requests of a stored answer on an object store: the kept answer (it shows that the
#: store is reached: its root is listed only when no answer is found, cli.stores); then, at
#: once, the run record and the dataset record, each listed (the latest version) and read,
#: and the labels table's meta.json and data file (checksummed). Before kept answers: 17
#: with one run, 3 more per run kept; 8 with the root listed first.
STORED_ANSWER_REQUESTS = 7


def test_a_stored_answer_on_s3_makes_a_few_requests_and_never_a_stale_one(
        s3_server, data, prefect_api, monkeypatch, battery):
    from s3fs import S3FileSystem

    from pipeline.stored import ANSWER, recall_answer

    env, log = s3_server
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    S3FileSystem.clear_instance_cache()
    url = f"s3://fastmice-{uuid.uuid4().hex[:8]}/store"
    cluster = ["cluster", data["tiny"], "--store", url, *OPTIONS, "--json"]

    def answered():
        before = _requests(log)
        summary = one_json(run_cli(cluster, **env).stdout)
        return summary, _requests(log) - before

    first = one_json(run_cli(cluster, prefect_api, **env).stdout)
    again, requests = answered()
    assert again["answered_from_store"] and again["run_id"] == first["run_id"]
    named = [one_json(run_cli([*cluster, "--run-name", f"more-{i}"], prefect_api,
                              **env).stdout)["run_id"] for i in range(2)]
    latest, requests_3_runs = answered()  # the latest run of the same plan, as before
    assert latest["answered_from_store"] and latest["run_id"] == named[-1]
    ok = requests <= STORED_ANSWER_REQUESTS and requests_3_runs == requests
    battery.record("s3", "requests of a stored answer on s3:// (the server's log), with 1 "
                   "and 3 runs kept", f"at most {STORED_ANSWER_REQUESTS}, not growing",
                   f"{requests} and {requests_3_runs}", ok)
    assert ok, (requests, requests_3_runs)

    store = open_store(url)
    (kept,) = store.list_records(ANSWER)
    run_cli(["rm", named[-1], "--store", url], **env)
    assert store.list_records(ANSWER) == []  # rm removes the answers naming the run
    after_rm, _ = answered()  # the usual path: the newest run left, kept anew
    assert after_rm["answered_from_store"] and after_rm["run_id"] == named[0]
    assert recall_answer(store, kept)["run_id"] == named[0]

    labels = store.read_record(RUN, named[0])["labels"]
    path = f"{store.root}/{labels['kind']}/{labels['key'][:2]}/{labels['key']}/data.parquet"
    damaged = bytearray(store.fs.cat(path))
    damaged[len(damaged) // 2] ^= 0x01
    store.fs.pipe(path, bytes(damaged))
    assert recall_answer(store, kept) is None  # a corrupt labels table: no answer
    assert len(store.quarantined()) == 1
