"""verification.json from a real measurement of the tiny twin (with fvcore's second opinion): written
under `llm_perf_opt.verification` v3 and read back into the same `Verification`; v2 and v1 files still load;
unknown versions, missing fields and verdicts that disagree with the rows are rejected by name."""

from __future__ import annotations

import json
import re

import pytest
import torch

from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.measure import (
    VERIFICATION_SCHEMA,
    check_model_agreement,
    fvcore_flops,
    load_verification,
    write_verification,
)
from llm_perf_opt.model_runtime.measure import measure_forward

SPEC = ModelSpec.tiny()
GUNDAM = VisionWorkload(base_size=1024, image_size=640, crop_mode=True)


@pytest.fixture(scope="module")
def verification():
    """Prefill + one decode step of the tiny twin in crop mode, counted by torch and by fvcore."""
    model = build_twin(SPEC, seed=0)
    inputs = build_inputs(SPEC, GUNDAM, 1700, 2200)
    kwargs = inputs.forward_kwargs(dtype=torch.float32)
    measured = measure_forward(model, kwargs, decode_steps=(1,))
    fv = fvcore_flops(model, dict(kwargs, use_cache=False))
    analytic = DeepseekOCRAnalyticModel(SPEC, inputs.layout, inputs.seq_len, dtype="float32")
    return check_model_agreement(analytic, measured.prefill, measured.decode, fvcore=fv), measured


def test_fvcore_is_reconciled_with_torch_on_the_tiny_twin(verification):
    v, measured = verification
    assert v.passed and v.fvcore is not None and v.fvcore.ok, v.fvcore.error if v.fvcore else None
    fv = v.to_dict()["fvcore"]
    torch_total = measured.prefill.total
    assert fv["vs_torch_prefill"]["torch"] == torch_total and fv["vs_torch_prefill"]["fvcore"] == v.fvcore.total
    rec = fv["reconciliation"]
    families = {f["family"]: f for f in rec["families"]}
    # every FLOP of difference is assigned to an op family
    assert (
        rec["fvcore_minus_torch"]
        == v.fvcore.total - torch_total
        == sum(f["fvcore_minus_torch"] for f in rec["families"])
    )
    # fvcore counts linears and convolutions as torch does (2 x its multiply-adds) ...
    assert families["linear (mm, addmm)"]["fvcore_minus_torch"] == 0 and families["linear (mm, addmm)"]["torch"] > 0
    assert families["convolution"]["fvcore_minus_torch"] == 0 and families["convolution"]["torch"] > 0
    # ... and skips scaled_dot_product_attention, which torch counts (SAM and CLIP attention)
    assert families["attention (SDPA; fvcore skips it)"]["fvcore"] == 0
    assert families["attention (SDPA; fvcore skips it)"]["torch"] > 0
    assert "aten::scaled_dot_product_attention" in fv["unsupported_ops"]
    # per part: fvcore's figure sits next to torch's, and parts without attention agree exactly
    rows = {(r.stage, r.part): r for r in v.rows}
    assert rows[("prefill", "lm_head")].fvcore == rows[("prefill", "lm_head")].measured > 0
    assert rows[("prefill", "model.sam_model")].fvcore < rows[("prefill", "model.sam_model")].measured
    assert all(r.fvcore is None for r in v.rows if r.stage == "decode")  # fvcore ran on the prefill only


def test_round_trip_rebuilds_the_same_verification(tmp_path, verification):
    v, _ = verification
    path = write_verification(tmp_path / "verification.json", v)
    doc = json.loads(path.read_text())
    assert (doc["schema"], doc["schema_version"]) == (VERIFICATION_SCHEMA, 3) == ("llm_perf_opt.verification", 3)
    back = load_verification(path)
    assert back.to_dict() == json.loads(json.dumps(v.to_dict()))
    assert back.passed and len(back.rows) == len(v.rows) and back.fvcore.total == v.fvcore.total


def test_version_1_under_the_old_name_still_loads(tmp_path, verification):
    v, _ = verification
    path = write_artifact(tmp_path / "verification.json", "verification", 1, v.to_dict())
    assert load_verification(path).to_dict() == json.loads(json.dumps(v.to_dict()))


@pytest.mark.parametrize("schema,version", [(VERIFICATION_SCHEMA, 4), ("verification", 2)])
def test_unknown_versions_are_rejected(tmp_path, verification, schema, version):
    path = write_artifact(tmp_path / "verification.json", schema, version, verification[0].to_dict())
    with pytest.raises(ArtifactError, match=f"schema_version {version} is unknown"):
        load_verification(path)


@pytest.mark.parametrize(
    "change,named",
    [
        (lambda d: d.pop("rtol"), "data lacks required field 'rtol'"),
        (lambda d: d["stages"][1].pop("rows"), "data.stages[1] lacks required field 'rows'"),
        (lambda d: d["stages"][0]["rows"][3].pop("ok"), "data.stages[0].rows[3] lacks required field 'ok'"),
        (lambda d: d["fvcore"].pop("by_operator"), "data.fvcore lacks required field 'by_operator'"),
        (lambda d: d["stages"][2]["rows"][0].update(ok=False), "data.stages[2].passed is True but its rows say False"),
        (lambda d: d.update(n_rows=1), "data.n_rows is 1 but the stages say"),
    ],
)
def test_missing_fields_and_disagreeing_verdicts_are_named(tmp_path, verification, change, named):
    data = json.loads(json.dumps(verification[0].to_dict()))
    change(data)
    path = write_artifact(tmp_path / "verification.json", VERIFICATION_SCHEMA, 2, data)
    with pytest.raises(ArtifactError, match=re.escape(named)):
        load_verification(path)
