"""Artifacts: round trip, atomic writes, rejection of unknown versions / missing fields / corrupt JSON."""

from __future__ import annotations

import json

import pytest

from llm_perf_opt.artifacts import read_artifact, write_artifact
from llm_perf_opt.errors import ArtifactError


def test_round_trip_keeps_data_and_records_producer(tmp_path):
    path = write_artifact(tmp_path / "a.json", "demo", 2, {"x": 1, "t": (1, 2)}, config={"k": "v"})
    version, data = read_artifact(path, "demo", versions=[1, 2], required=["x"])
    assert (version, data) == (2, {"x": 1, "t": [1, 2]})
    doc = json.loads(path.read_text())
    assert doc["producer"]["versions"]["torch"] and len(doc["producer"]["config_hash"]) == 12
    assert not list(tmp_path.glob(".*tmp")), "temporary file left behind"


def test_unknown_version_is_rejected_by_number(tmp_path):
    path = write_artifact(tmp_path / "a.json", "demo", 9, {"x": 1})
    with pytest.raises(ArtifactError, match=r"schema_version 9 is unknown \(this reader knows \[1, 2\]\)"):
        read_artifact(path, "demo", versions=[1, 2])


def test_missing_field_is_named(tmp_path):
    path = write_artifact(tmp_path / "a.json", "demo", 1, {"x": 1})
    with pytest.raises(ArtifactError, match="lacks required field 'y'"):
        read_artifact(path, "demo", versions=[1], required=["x", "y"])
    (tmp_path / "b.json").write_text(json.dumps({"schema": "demo", "data": {}}))
    with pytest.raises(ArtifactError, match="missing field 'schema_version'"):
        read_artifact(tmp_path / "b.json", "demo", versions=[1])


def test_wrong_schema_and_corrupt_json(tmp_path):
    path = write_artifact(tmp_path / "a.json", "other", 1, {})
    with pytest.raises(ArtifactError, match="schema is 'other', expected 'demo'"):
        read_artifact(path, "demo", versions=[1])
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "demo", ')
    with pytest.raises(ArtifactError, match="not valid JSON"):
        read_artifact(bad, "demo", versions=[1])
    with pytest.raises(ArtifactError, match="no such file"):
        read_artifact(tmp_path / "none.json", "demo", versions=[1])


def test_failed_write_keeps_the_old_file(tmp_path):
    path = write_artifact(tmp_path / "a.json", "demo", 1, {"x": 1})

    class Unserialisable:
        def __str__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_artifact(path, "demo", 1, {"x": Unserialisable()})
    assert read_artifact(path, "demo", versions=[1])[1] == {"x": 1}
