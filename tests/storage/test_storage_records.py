"""Named, versioned records (dataset manifests, run records) and name validation."""

from __future__ import annotations

import numpy as np
import pytest

from storage import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    BaseStore,
    RecordConflictError,
    validate_name,
)


def test_records_keep_their_history(any_store):
    assert any_store.write_record("run", "nightly", {"status": "running", "k": np.int64(5)}) == 1
    assert any_store.write_record("run", "nightly", {"status": "done", "k": 5}) == 2
    assert any_store.read_record("run", "nightly") == {"status": "done", "k": 5}
    assert any_store.read_record("run", "nightly", version=1) == {"status": "running", "k": 5}
    assert any_store.record_versions("run", "nightly") == [1, 2]
    any_store.write_record("run", "adhoc", {})
    any_store.write_record("dataset", "blobs", {"n": 1})
    assert any_store.list_records("run") == ["adhoc", "nightly"]
    assert any_store.list_records("dataset") == ["blobs"]
    assert any_store.list_records("other") == []


def test_record_layout(local_store):
    local_store.write_record("run", "r1", {"a": 1})
    local_store.write_record("run", "r1", {"a": 2})
    folder = local_store.root / "records" / "run" / "r1"
    assert sorted(p.name for p in folder.iterdir()) == ["v000001.json", "v000002.json"]


def test_compare_and_swap(any_store):
    any_store.write_record("dataset", "d", {"n": 1}, expected_version=0)
    with pytest.raises(RecordConflictError, match=r"expected it not to exist yet, .* version 1"):
        any_store.write_record("dataset", "d", {"n": 9}, expected_version=0)
    assert any_store.write_record("dataset", "d", {"n": 2}, expected_version=1) == 2
    with pytest.raises(
        RecordConflictError, match=r"expected it to be at version 1, .* has version 2"
    ) as e:
        any_store.write_record("dataset", "d", {"n": 3}, expected_version=1)
    assert (e.value.expected_version, e.value.found_version) == (1, 2)
    assert any_store.read_record("dataset", "d") == {"n": 2}
    assert any_store.record_versions("dataset", "d") == [1, 2]


def test_lost_race_for_a_version(any_store, monkeypatch):
    """Another writer creates the same version between our check and our write."""
    any_store.write_record("run", "r", {"v": 1})
    real = type(any_store)._create_exclusive

    def other_writer_first(self, rel, data):
        monkeypatch.setattr(type(self), "_create_exclusive", real)
        real(self, rel, b'{"data": {"v": "theirs"}}')  # the other writer's version 2
        return real(self, rel, data)

    monkeypatch.setattr(type(any_store), "_create_exclusive", other_writer_first)
    with pytest.raises(RecordConflictError, match=r"has version 2"):
        any_store.write_record("run", "r", {"v": "ours"}, expected_version=1)

    monkeypatch.setattr(type(any_store), "_create_exclusive", other_writer_first)
    # Without expected_version, our write goes after theirs: nothing is overwritten.
    assert any_store.write_record("run", "r", {"v": "ours"}) == 4
    assert any_store.read_record("run", "r") == {"v": "ours"}
    assert any_store.record_versions("run", "r") == [1, 2, 3, 4]


def test_corrupt_record_version_is_quarantined_and_the_earlier_one_read(local_store, caplog):
    local_store.write_record("run", "r", {"score": 0.5})
    local_store.write_record("run", "r", {"score": 0.75})
    path = local_store.root / "records" / "run" / "r" / "v000002.json"
    path.write_text(path.read_text().replace("0.75", "0.95"))
    assert local_store.verify_record("run", "r", 2) == "sha256 mismatch"  # nothing moved yet
    assert path.exists()
    with caplog.at_level("WARNING", logger="storage"):
        assert local_store.read_record("run", "r") == {"score": 0.5}
    assert "Quarantined corrupt record run/r version 2: sha256 mismatch" in caplog.text
    assert not path.exists() and local_store.record_versions("run", "r") == [1]
    (entry,) = local_store.quarantined()
    assert (entry["kind"], entry["record"], entry["version"]) == ("run", "r", 2)
    assert entry["reason"] == "sha256 mismatch"
    # The next write takes the freed version number; the quarantined copy stays.
    assert local_store.write_record("run", "r", {"score": 0.8}) == 2
    assert local_store.read_record("run", "r") == {"score": 0.8}


def test_a_record_whose_every_version_is_corrupt_is_set_aside(local_store):
    local_store.write_record("run", "r", {"score": 0.5})
    path = local_store.root / "records" / "run" / "r" / "v000001.json"
    path.write_text("{trunc")
    with pytest.raises(ArtifactIntegrityError,
                       match=r"run/r .* corrupt: unreadable \(JSONDecodeError.*quarantine"):
        local_store.read_record("run", "r")
    assert local_store.list_records("run") == []
    with pytest.raises(ArtifactNotFoundError):
        local_store.read_record("run", "r")


def test_an_asked_for_corrupt_version_raises(any_store):
    any_store.write_record("run", "r", {"score": 0.5})
    any_store.write_record("run", "r", {"score": 0.75})
    rel = "records/run/r/v000001.json"
    any_store._write_bytes(rel, any_store._read_bytes(rel).replace(b"0.5", b"0.6"))
    with pytest.raises(ArtifactIntegrityError, match=r"run/r version 1 .* sha256 mismatch"):
        any_store.read_record("run", "r", version=1)
    assert any_store.record_versions("run", "r") == [2]
    assert [q["version"] for q in any_store.quarantined()] == [1]


def test_missing_records(any_store):
    with pytest.raises(ArtifactNotFoundError, match=r"No record run/nope in store"):
        any_store.read_record("run", "nope")
    any_store.write_record("run", "r", {})
    with pytest.raises(ArtifactNotFoundError, match=r"run/r has no version 7 .* versions: \[1\]"):
        any_store.read_record("run", "r", version=7)


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        ([1, 2], TypeError, r"Record data must be a dict; got list"),
        ({"a": np.zeros(3)}, TypeError, r"record run/r\['a'\] is of type numpy\.ndarray"),
        ({"a": {1: 2}}, TypeError, r"has a key 1 of type int"),
    ],
)
def test_record_data_must_be_json(local_store, data, error, match):
    with pytest.raises(error, match=match):
        local_store.write_record("run", "r", data)
    assert local_store.record_versions("run", "r") == []


BAD_NAMES = [
    ("../x", r"Invalid record name '\.\./x'"),
    ("a/b", r"Invalid record name 'a/b'"),
    ("a\\b", r"Invalid record name 'a\\\\b'"),
    ("", r"Invalid record name '' \(length 0\)"),
    ("x" * 129, r"Invalid record name 'x{77}\.\.\.' \(length 129\)"),
    (".hidden", r"Invalid record name '\.hidden'"),
    ("a..b", r"Invalid record name 'a\.\.b'.*no '\.\.'"),
    ("two words", r"Invalid record name 'two words'"),
    ("/abs", r"Invalid record name '/abs'"),
]


@pytest.mark.parametrize(("name", "match"), BAD_NAMES)
def test_bad_record_names_are_rejected(local_store, name, match):
    with pytest.raises(ValueError, match=match):
        local_store.write_record("run", name, {"a": 1})
    with pytest.raises(ValueError, match=match):
        local_store.read_record("run", name)
    assert not local_store.root.exists() or not (local_store.root / "records").exists()


@pytest.mark.parametrize("name", ["x" * 128, "run-1.v2_A", "0", "2024-01-01T00.00"])
def test_good_names_are_accepted(name):
    assert validate_name(name) == name


def test_non_str_name_is_a_type_error():
    with pytest.raises(TypeError, match=r"dataset name must be a str; got int 3"):
        validate_name(3, "dataset name")


def test_bad_record_kind(local_store):
    with pytest.raises(ValueError, match=r"Invalid kind 'Runs'"):
        local_store.write_record("Runs", "r", {})
    assert isinstance(local_store, BaseStore)
