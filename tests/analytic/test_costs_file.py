"""costs.json: written under `llm_perf_opt.costs` v2, read back typed; v1 files (`costs`) still load;
unknown versions and missing fields are rejected by name."""

from __future__ import annotations

import json
import re

import pytest

from llm_perf_opt.analytic import COSTS_SCHEMA, COSTS_SCHEMA_VERSION, load_costs, write_costs
from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.deepseek_ocr_shared.analytic import costs_dict
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ArtifactError

GUNDAM = VisionWorkload(base_size=1024, image_size=640, crop_mode=True)


@pytest.fixture(scope="module")
def model() -> DeepseekOCRAnalyticModel:
    return DeepseekOCRAnalyticModel(ModelSpec.tiny(), compute_view_layout(GUNDAM, 1700, 2200))


def _edit(path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc["data"])
    path.write_text(json.dumps(doc))


def test_round_trip_is_typed_and_exact(tmp_path, model):
    path = write_costs(tmp_path / "costs.json", model)
    doc = json.loads(path.read_text())
    assert (doc["schema"], doc["schema_version"]) == ("llm_perf_opt.costs", 2) == (COSTS_SCHEMA, COSTS_SCHEMA_VERSION)
    costs = load_costs(path)
    assert costs.schema_version == 2 and costs.seq_len == model.seq_len and costs.model == model.spec.name
    for name, stage in model.stages().items():
        back = costs.stages[name]
        assert back.total == stage.total and back.roots == stage.roots
        assert back.parts == stage.parts and back.containers == stage.containers
        assert back.part("sam") == stage.part("sam") and back.part("decoder.layer.1") == stage.part("decoder.layer.1")
        assert back.part("model.layers.1.mlp.experts") == stage.part("model.layers.1.mlp.experts")


def test_version_1_under_the_old_name_still_loads(tmp_path, model):
    path = write_artifact(tmp_path / "costs.json", "costs", 1, costs_dict(model))
    costs = load_costs(path)
    assert costs.schema_version == 1
    assert costs.stages["prefill"].total == model.prefill().total


def test_without_the_part_table(tmp_path, model):
    path = write_artifact(tmp_path / "costs.json", COSTS_SCHEMA, 2, costs_dict(model, with_parts=False))
    prefill = load_costs(path).stages["prefill"]
    assert prefill.parts is None and prefill.part("clip") == model.prefill().part("clip")
    with pytest.raises(KeyError, match="no per-part table"):
        prefill.part("model.sam_model.blocks.0")


@pytest.mark.parametrize("schema,version", [(COSTS_SCHEMA, 3), (COSTS_SCHEMA, 1), ("costs", 2), ("roofline", 2)])
def test_unknown_versions_and_schemas_are_rejected(tmp_path, model, schema, version):
    path = write_artifact(tmp_path / "costs.json", schema, version, costs_dict(model))
    with pytest.raises(ArtifactError, match=f"schema_version {version}|schema is 'roofline'"):
        load_costs(path)


@pytest.mark.parametrize(
    "change,named",
    [
        (lambda d: d.pop("seq_len"), "data lacks required field 'seq_len'"),
        (lambda d: d["stages"].pop("decode"), "data.stages lacks required field 'decode'"),
        (lambda d: d["stages"]["prefill"].pop("total"), "data.stages.prefill lacks required field 'total'"),
        (
            lambda d: d["stages"]["vision"]["parts"]["model.sam_model"].pop("flops_other"),
            "data.stages.vision.parts.model.sam_model lacks required field 'flops_other'",
        ),
        (lambda d: d["stages"]["vision"]["summary"]["sam"].update(flops=1), "flops / io_bytes disagree"),
        (lambda d: d["stages"]["decode"]["total"].update(weight_bytes="12"), "must be integers"),
    ],
)
def test_missing_or_broken_fields_are_named(tmp_path, model, change, named):
    path = write_costs(tmp_path / "costs.json", model)
    _edit(path, change)
    with pytest.raises(ArtifactError, match=re.escape(named)):
        load_costs(path)
