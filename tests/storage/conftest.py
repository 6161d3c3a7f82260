"""Fixtures for the storage tests: a local store, an in-memory fsspec store, a file:// one."""

from __future__ import annotations

import uuid

import pytest

from storage import FsspecStore, LocalStore


@pytest.fixture
def local_store(tmp_path):
    return LocalStore(tmp_path / "store")


@pytest.fixture
def memory_store():
    store = FsspecStore(f"memory://fastmice-test-{uuid.uuid4().hex}")
    yield store
    if store.fs.exists(store.root):
        store.fs.rm(store.root, recursive=True)


@pytest.fixture(params=["local", "memory", "file"])
def any_store(request, tmp_path):
    """Every backend: LocalStore, FsspecStore on memory:// and FsspecStore on file://."""
    if request.param == "local":
        yield LocalStore(tmp_path / "store")
    elif request.param == "file":
        yield FsspecStore((tmp_path / "fstore").as_uri())
    else:
        store = FsspecStore(f"memory://fastmice-test-{uuid.uuid4().hex}")
        yield store
        if store.fs.exists(store.root):
            store.fs.rm(store.root, recursive=True)
