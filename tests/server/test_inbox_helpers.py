"""The inbox bookkeeping of flows/deployments.py, without a server (plain functions)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "prefect", reason="prefect is not installed; install the pipeline extra: "
    "pip install -e '.[pipeline]'"
)

from flows.deployments import _check_bound, _move, _pending


def test_pending_lists_visible_npz_files_in_name_order(tmp_path):
    for name in ("b.npz", "a.npz", ".c.tmp.npz", "notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "processed").mkdir()
    (tmp_path / "processed" / "old.npz").write_bytes(b"x")
    (tmp_path / "dir.npz").mkdir()
    assert [p.name for p in _pending(tmp_path)] == ["a.npz", "b.npz"]


def test_move_keeps_an_earlier_file_of_the_same_name(tmp_path):
    first, second = tmp_path / "x.npz", tmp_path / "processed"
    first.write_bytes(b"old")
    assert _move(first, second) == second / "x.npz"
    first.write_bytes(b"new")
    moved = _move(first, second)
    assert moved.parent == second and moved.name.startswith("x.") and moved.suffix == ".npz"
    assert sorted(p.read_bytes() for p in second.iterdir()) == [b"new", b"old"]
    assert not first.exists()


@pytest.mark.parametrize("name", ["inbox", "store_url", "dask_address"])
def test_check_bound_rejects_an_unresolved_placeholder(name):
    _check_bound(inbox="/data/inbox", store_url=None, dask_address="")
    with pytest.raises(ValueError, match=rf"{name}='\{{\{{ \$X \}}\}}' is an unresolved"):
        _check_bound(**{name: "{{ $X }}"})
