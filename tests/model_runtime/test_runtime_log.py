"""RuntimeLog: ordered events with a monotonically increasing seq, queries, and the runtime_log.json artifact."""

from __future__ import annotations

import json

import pytest

from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.model_runtime.runtime_log import RUNTIME_LOG_SCHEMA, RuntimeLog, load_runtime_log


def sample_log() -> RuntimeLog:
    log = RuntimeLog()
    log.note_patch("vision_inputs", ["modeling_deepseekocr.DeepseekOCRModel.forward"])
    log.record(
        "vision_inputs",
        vision=True,
        num_images=1,
        images_spatial_crop=[[2, 3]],
        crops_per_image=[6],
        views=7,
        vision_passes=2,
        seq_len=908,
    )
    log.record("llm_stack", num_layers=12, seq_len=908, past_len=0, step=0)
    log.record("llm_stack", num_layers=12, seq_len=1, past_len=908, step=1)
    log.record("decode_step", step=1, context_len=909)
    return log


def test_record_and_query():
    log = sample_log()
    assert [e["seq"] for e in log] == [0, 1, 2, 3]
    assert [e["event"] for e in log.events()] == ["vision_inputs", "llm_stack", "llm_stack", "decode_step"]
    assert [e["step"] for e in log.events("llm_stack")] == [0, 1]
    assert log.events("nothing") == []
    assert log.first("llm_stack")["past_len"] == 0 and log.last("llm_stack")["past_len"] == 908
    assert log.first("nothing") is None
    assert log.counts() == {"vision_inputs": 1, "llm_stack": 2, "decode_step": 1}
    assert log.count("llm_stack") == 2 and len(log) == 4
    assert list(log.events()[0])[:2] == ["seq", "event"]
    assert log.patch_names() == ["vision_inputs"]


def test_reserved_fields_and_kinds():
    log = RuntimeLog()
    with pytest.raises(ValueError, match="reserved"):
        log.record("x", seq=3)
    with pytest.raises(ValueError):
        log.record("")


def test_save_and_load_round_trip(tmp_path):
    log = sample_log()
    path = log.save(tmp_path)
    assert path.name == "runtime_log.json"
    doc = json.loads(path.read_text())
    assert doc["schema"] == RUNTIME_LOG_SCHEMA and doc["schema_version"] == 1
    assert doc["data"]["counts"] == log.counts()
    loaded = load_runtime_log(tmp_path)
    assert loaded.events() == log.events()
    assert loaded.patches == log.patches
    loaded.record("llm_stack", step=2)
    assert loaded.last("llm_stack")["seq"] == 4
    assert load_runtime_log(path).to_dict() == log.to_dict()


def test_load_rejects_unknown_version_and_bad_events(tmp_path):
    bad = tmp_path / "v9.json"
    write_artifact(bad, RUNTIME_LOG_SCHEMA, 9, {"events": []})
    with pytest.raises(ArtifactError, match="schema_version 9"):
        load_runtime_log(bad)
    no_seq = tmp_path / "no_seq.json"
    write_artifact(no_seq, RUNTIME_LOG_SCHEMA, 1, {"events": [{"event": "llm_stack"}]})
    with pytest.raises(ArtifactError, match=r"events\[0\] lacks field 'seq'"):
        load_runtime_log(no_seq)
    backwards = tmp_path / "backwards.json"
    write_artifact(backwards, RUNTIME_LOG_SCHEMA, 1, {"events": [{"seq": 1, "event": "a"}, {"seq": 1, "event": "b"}]})
    with pytest.raises(ArtifactError, match="does not increase"):
        load_runtime_log(backwards)
    no_events = tmp_path / "no_events.json"
    write_artifact(no_events, RUNTIME_LOG_SCHEMA, 1, {"patches": []})
    with pytest.raises(ArtifactError, match="events"):
        load_runtime_log(no_events)


def test_missing_patches_metadata_reads_as_empty(tmp_path):
    path = tmp_path / "old.json"
    write_artifact(path, RUNTIME_LOG_SCHEMA, 1, {"events": [{"seq": 0, "event": "llm_stack", "step": 0}]})
    log = load_runtime_log(path)
    assert log.patches == [] and log.count("llm_stack") == 1
