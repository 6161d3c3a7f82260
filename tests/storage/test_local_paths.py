"""A local store's root is normalised: the paths it prints never keep ".."."""

from __future__ import annotations

import os

from storage import open_store


def test_a_store_given_with_dot_dot_prints_a_normalised_path(tmp_path, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    store = open_store(os.path.join("..", "work", "..", "store"))
    assert store.url == str(tmp_path / "store")
    assert ".." not in store.url
