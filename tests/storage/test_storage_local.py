"""LocalStore specifics: atomic publication, crash leftovers, store root, open_store."""

from __future__ import annotations

import hashlib
import os
import time

import numpy as np
import pytest
import scipy.sparse as sp

import storage._codecs
from storage import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    FsspecStore,
    LocalStore,
    content_key,
    open_store,
)
from storage import _filememo as filememo_module
from storage import local as local_module


def _visible_files(root):
    """Files a reader could pick up: everything outside hidden temporary entries."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".tmp-") for part in p.parts)
    )


def test_interrupted_publish_leaves_no_artifact(local_store, monkeypatch):
    local_store.put("labels", "other", np.arange(2))
    X = sp.random(30, 10, density=0.3, format="csr", random_state=0)
    key = content_key(X)
    staged = []

    def crash(src, dst):
        staged.append(sorted(p.name for p in src.iterdir()))
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        local_store.put("anchor-graph", key, X)
    monkeypatch.undo()
    assert staged[0] == ["data.npz", "meta.json"]  # it crashed at the very last step
    assert not local_store.exists("anchor-graph", key)
    assert local_store.list("anchor-graph") == []
    assert _visible_files(local_store.root) == [
        ".gitignore",
        "labels/ot/other/data.npy",
        "labels/ot/other/meta.json",
    ]
    assert not list(local_store.root.rglob(".tmp-*"))  # cleaned up on the way out
    ref = local_store.put("anchor-graph", key, X)  # the retry works
    assert (local_store.get(ref) != X).nnz == 0


def test_crash_while_encoding_leaves_no_artifact(local_store, monkeypatch):
    real_encode = storage._codecs.encode

    def half_write(fmt, obj, f):
        f.write(b"\x93NUMPY partial")
        raise MemoryError("simulated crash mid-write")

    monkeypatch.setattr(storage._codecs, "encode", half_write)
    with pytest.raises(MemoryError, match="mid-write"):
        local_store.put("labels", "k", np.arange(100))
    monkeypatch.setattr(storage._codecs, "encode", real_encode)
    assert not local_store.exists("labels", "k")
    assert _visible_files(local_store.root) == [".gitignore"]
    assert not list(local_store.root.rglob(".tmp-*"))


def test_leftovers_of_a_hard_crash_are_ignored(local_store):
    # What a killed process leaves: a hidden temporary folder with a partial file.
    local_store.put("labels", "other", np.arange(2))
    tmp = local_store.root / "labels" / "k" / ".tmp-123abc-k"
    tmp.mkdir(parents=True)
    (tmp / "data.npy").write_bytes(b"\x93NUMPY partial")
    assert local_store.list("labels") == ["other"]
    assert not local_store.exists("labels", "k")
    ref = local_store.put("labels", "k", np.arange(5))
    np.testing.assert_array_equal(local_store.get(ref), np.arange(5))


def test_folder_without_meta_is_absent_and_replaced(local_store):
    folder = local_store.root / "labels" / "k" / "k"
    folder.mkdir(parents=True)
    (folder / "data.npy").write_bytes(b"garbage")
    assert not local_store.exists("labels", "k")
    ref = local_store.put("labels", "k", np.arange(5))
    np.testing.assert_array_equal(local_store.get(ref), np.arange(5))
    [entry] = local_store.quarantined()
    assert entry["reason"] == "incomplete artifact folder"


def test_concurrent_writer_of_the_same_key_keeps_the_first_artifact(local_store, monkeypatch):
    first = local_store.put("labels", "k", np.arange(5))
    meta = local_store.read_meta(first)

    # A second writer that checked before the first one published: it writes, then its
    # os.replace fails on the non-empty folder, and the first artifact stands.
    def not_there_yet(self, kind, key, load=False):
        raise ArtifactNotFoundError(f"{kind}/{key} (as seen before the first writer finished)")

    monkeypatch.setattr(LocalStore, "_check", not_there_yet)
    second = local_store.put("labels", "k", np.arange(5))
    monkeypatch.undo()
    assert second == first
    assert local_store.read_meta(first) == meta
    assert not list(local_store.root.rglob(".tmp-*"))


def test_npz_temp_names_keep_their_suffix(local_store, monkeypatch):
    # np.savez / sp.save_npz append ".npz" to a *path* not ending in ".npz": the writer
    # must give them a file object or a name ending in ".npz" (PREFECT.md 3.8).
    seen = []
    real_save_npz = sp.save_npz

    def spy(file, matrix, compressed=True):
        seen.append(file)
        real_save_npz(file, matrix, compressed=compressed)

    monkeypatch.setattr(sp, "save_npz", spy)
    ref = local_store.put("anchor-graph", "k", sp.eye(4, format="csr"))
    [file] = seen
    assert str(getattr(file, "name", "")).endswith("data.npz")
    assert local_store.get(ref).nnz == 4
    assert [p.name for p in local_store.local_path(ref).parent.iterdir()].count("data.npz") == 1


def test_new_root_gets_gitignore_but_an_existing_folder_does_not(tmp_path):
    store = LocalStore(tmp_path / "new" / "store")
    assert not store.root.exists()  # nothing is created until the first write
    assert store.list("labels") == [] and not store.exists("labels", "k")
    assert not store.root.exists()
    store.put("labels", "k", np.arange(2))
    assert (store.root / ".gitignore").read_text().splitlines()[-1] == "*"

    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("mine")
    LocalStore(project).put("labels", "k", np.arange(2))
    assert not (project / ".gitignore").exists()


def test_open_store_defaults_and_urls(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTMICE_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    store = open_store()
    assert isinstance(store, LocalStore) and store.root == tmp_path / ".fastmice"
    monkeypatch.setenv("FASTMICE_STORE", str(tmp_path / "env-store"))
    assert open_store().root == tmp_path / "env-store"
    monkeypatch.setenv("FASTMICE_STORE", "memory://env-store")
    assert isinstance(open_store(), FsspecStore)
    assert isinstance(open_store("memory://x"), FsspecStore)
    assert isinstance(open_store((tmp_path / "f").as_uri()), FsspecStore)
    assert open_store("rel").root == tmp_path / "rel"  # absolute from now on
    assert open_store(store) is store
    with pytest.raises(TypeError, match=r"storage_options \['anon'\] only apply to fsspec URLs"):
        open_store(tmp_path, anon=True)


def test_record_versions_without_hard_links(local_store, monkeypatch):
    def no_links(src, dst):
        raise PermissionError("hard links not supported here")

    monkeypatch.setattr(os, "link", no_links)
    assert local_store.write_record("run", "r", {"a": 1}) == 1
    assert local_store.write_record("run", "r", {"a": 2}) == 2
    assert local_store.read_record("run", "r", version=1) == {"a": 1}
    assert not list(local_store.root.rglob(".tmp-*"))


def test_a_file_is_hashed_once_per_process_while_it_is_unchanged(local_store, monkeypatch):
    monkeypatch.setattr(filememo_module, "RACY_NS", 0)  # remember even a file just written
    x = np.arange(1000.0)
    ref = local_store.put("anchors", content_key(x), x)
    local_store.get(ref)  # hashes the file and remembers its sha256
    calls = []
    real = hashlib.file_digest
    monkeypatch.setattr(hashlib, "file_digest",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    np.testing.assert_array_equal(local_store.get(ref, mmap=True), x)
    assert calls == []

    time.sleep(0.05)  # past the file-time tick of the write above
    data = next((local_store.root / "anchors").rglob("data.npy"))
    raw = bytearray(data.read_bytes())
    raw[-8:] = b"\xff" * 8  # same size, changed in place
    data.write_bytes(bytes(raw))
    with pytest.raises(ArtifactIntegrityError, match="sha256 mismatch"):
        local_store.get(ref)
    assert calls == [1]


def test_a_file_changed_just_before_hashing_is_not_remembered(local_store):
    x = np.arange(10.0)
    local_store.put("anchors", content_key(x), x)
    before = dict(local_module._digests._values)
    local_store.get(local_store.ref("anchors", content_key(x)))
    assert local_module._digests._values == before
