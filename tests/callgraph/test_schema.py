"""`callgraph.schema`: save/load round trip, older formats, refusals by name."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from llm_perf_opt.callgraph.capture import capture
from llm_perf_opt.callgraph.schema import (
    GRAPH_KEYS,
    METADATA_KEYS,
    SCHEMA,
    SCHEMA_VERSION,
    CallGraph,
    load_callgraph_json,
)
from llm_perf_opt.errors import ArtifactError

GRAPH = {
    "call_counts": {"": 1, "enc": 2, "enc.fc": 2, "unused": 0},
    "edges": {"": {"enc": 2}, "enc": {"enc.fc": 2}},
    "op_call_counts": {"": 1, "enc": 2, "enc.fc": 2},
    "module_children": {"": ["enc", "unused"], "enc": ["enc.fc"], "enc.fc": [], "unused": []},
    "module_types": {"": "Model", "enc": "Encoder", "enc.fc": "Linear", "unused": "Linear"},
}


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(4, 4), nn.GELU())
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.enc(x) + self.enc(x * 2))


@pytest.fixture(scope="module")
def captured() -> CallGraph:
    with torch.no_grad():
        return capture(
            Small().eval(),
            forward_args=[torch.randn(3, 4)],
            model_name="small",
            runtime_log=[{"event": "vision_inputs", "views": 1}],
        ).callgraph


def test_round_trip_of_a_captured_graph(captured, tmp_path):
    path = captured.save(tmp_path / "callgraph.json", config={"model": "small"})
    doc = json.loads(path.read_text())
    assert doc["schema"] == SCHEMA and doc["schema_version"] == SCHEMA_VERSION
    assert doc["producer"]["config_hash"] and "torchlens" in doc["producer"]["versions"]
    loaded = load_callgraph_json(path)
    assert loaded.to_dict() == captured.to_dict()
    assert loaded.edges[""]["enc"] == 2 and loaded.runtime_log == [{"event": "vision_inputs", "views": 1}]
    for key in METADATA_KEYS:
        assert getattr(loaded, key), key


def test_round_trip_of_a_hand_built_graph(tmp_path):
    cg = CallGraph(**GRAPH, constructor_params={"enc.fc": {"in_features": 4}}, stats={"num_ops": 5})
    loaded = load_callgraph_json(cg.save(tmp_path / "cg.json"))
    assert loaded == cg


def test_seed_format_bare_dict_loads_with_empty_metadata(tmp_path):
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(GRAPH))
    cg = load_callgraph_json(path)
    assert cg.call_counts == GRAPH["call_counts"] and cg.edges == GRAPH["edges"]
    for key in METADATA_KEYS + ("stats",):
        assert getattr(cg, key) == {}, key
    assert cg.runtime_log == [] and cg.model_name == ""


def test_version_1_document_loads_with_empty_metadata(tmp_path):
    path = tmp_path / "v1.json"
    path.write_text(json.dumps({"schema": SCHEMA, "schema_version": 1, "producer": {}, "data": GRAPH}))
    cg = load_callgraph_json(path)
    assert cg.module_types == GRAPH["module_types"]
    assert cg.input_metadata == {} and cg.constructor_params == {} and cg.activation_bytes == {}


def test_unknown_schema_version_is_refused(tmp_path):
    path = tmp_path / "v99.json"
    path.write_text(json.dumps({"schema": SCHEMA, "schema_version": 99, "producer": {}, "data": GRAPH}))
    with pytest.raises(ArtifactError, match="schema_version 99 is unknown"):
        load_callgraph_json(path)


def test_other_schema_is_refused(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"schema": "llm_perf_opt.summary", "schema_version": 1, "data": GRAPH}))
    with pytest.raises(ArtifactError, match="expected 'llm_perf_opt.callgraph'"):
        load_callgraph_json(path)


@pytest.mark.parametrize("missing", GRAPH_KEYS)
def test_missing_graph_key_is_named(tmp_path, missing):
    path = tmp_path / "missing.json"
    path.write_text(json.dumps({k: v for k, v in GRAPH.items() if k != missing}))
    with pytest.raises(ArtifactError, match=missing):
        load_callgraph_json(path)


def test_wrong_field_type_and_bad_json_are_refused(tmp_path):
    path = tmp_path / "bad_type.json"
    path.write_text(json.dumps(dict(GRAPH, edges=[])))
    with pytest.raises(ArtifactError, match="'edges' must be an object"):
        load_callgraph_json(path)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        load_callgraph_json(broken)
    with pytest.raises(ArtifactError, match="no such file"):
        load_callgraph_json(tmp_path / "absent.json")
