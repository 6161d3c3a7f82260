"""Few requests per read on an object store: independent reads made at once
(``BaseStore.concurrently``), a record version read without a listing, a small file read and
checksummed in one request; and an S3 client's botocore data read once per process."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from storage import ArtifactNotFoundError, FsspecStore, content_key


def test_concurrently_returns_results_in_order_and_raises_after_every_call(any_store):
    finished = []

    def slow(value, delay):
        def call():
            time.sleep(delay)
            finished.append(value)
            return value
        return call

    def fails():
        raise ArtifactNotFoundError("gone")

    assert any_store.concurrently(slow(1, 0.05), slow(2, 0.0), slow(3, 0.02)) == [1, 2, 3]
    finished.clear()
    with pytest.raises(ArtifactNotFoundError, match="gone"):
        any_store.concurrently(fails, slow("late", 0.1))
    assert finished == ["late"]  # the other call ran to its end


def test_concurrently_overlaps_only_where_reads_are_round_trips(local_store, memory_store):
    here = threading.get_ident()
    assert local_store.concurrently(threading.get_ident, threading.get_ident) == [here, here]
    assert here not in memory_store.concurrently(threading.get_ident, threading.get_ident)


def test_a_record_version_is_one_read_and_a_missing_one_says_which_exist(any_store,
                                                                        monkeypatch):
    any_store.write_record("run", "r", {"a": 1})
    any_store.write_record("run", "r", {"a": 2})
    listed = []
    real = any_store._listdir
    monkeypatch.setattr(any_store, "_listdir", lambda rel: listed.append(rel) or real(rel))
    assert any_store.read_record("run", "r", version=1) == {"a": 1}
    assert listed == []
    with pytest.raises(ArtifactNotFoundError, match=r"no version 3 .*versions: \[1, 2\]"):
        any_store.read_record("run", "r", version=3)


def test_small_and_empty_files_are_read_whole(any_store):
    any_store._write_bytes("x/empty", b"")
    any_store._write_bytes("x/small", b"abc")
    assert any_store._read_bytes("x/empty") == b""
    assert any_store._read_bytes("x/small") == b"abc"
    with pytest.raises(FileNotFoundError):
        any_store._read_bytes("x/missing")


def test_a_small_artifact_is_checksummed_in_one_read(memory_store, monkeypatch):
    ref = memory_store.put("labels", content_key("small"), np.arange(100))
    opened = []
    real_open = memory_store.fs.open
    monkeypatch.setattr(memory_store.fs, "open", lambda *a, **k: opened.append(a) or
                        real_open(*a, **k))
    assert memory_store.verify(ref.kind, ref.key) is None
    assert opened == []  # read whole, not opened and streamed (a size request, then reads)
    key = ref.key
    path = f"{memory_store.root}/labels/{key[:2]}/{key}/data.npy"
    memory_store.fs.pipe(path, memory_store.fs.cat(path) + b"!")  # resized: still detected
    assert memory_store.verify(ref.kind, ref.key).startswith("truncated or resized")


def test_s3_stores_share_one_botocore_session_per_process():
    pytest.importorskip("s3fs")
    import os

    from storage import _s3

    first = _s3.s3_options({})["session"]
    assert _s3.s3_options({})["session"] is first
    assert "session" not in _s3.s3_options({"profile": "p"})
    assert FsspecStore("s3://bucket/store").fs.session is first
    saved = _s3._session
    try:
        _s3._session = (None, "made before a fork")  # warm_s3's: taken by the first user
        assert _s3.s3_options({})["session"] == "made before a fork"
        assert _s3._session == (os.getpid(), "made before a fork")
        _s3._session = (-1, "another process's")
        assert _s3.s3_options({})["session"] != "another process's"
    finally:
        _s3._session = saved
