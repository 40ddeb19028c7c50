"""Roofline predictions: one layer by hand (FLOPs / peak vs bytes / bandwidth, as products of named
dimensions), bound classification, stage sums, the stage figures, the roofline.json artifact."""

from __future__ import annotations

import json
import math

import pytest

from llm_perf_opt.analytic import LayerCost
from llm_perf_opt.analytic.hardware import Roof, load_hardware
from llm_perf_opt.analytic.roofline import CONVENTION, Estimate, estimate, predict, predict_latency
from llm_perf_opt.analytic.roofline_artifact import ROOFLINE_SCHEMA, load_roofline, write_roofline
from llm_perf_opt.artifacts import to_jsonable
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ArtifactError

GUNDAM = VisionWorkload(1024, 640, True)
H100_BF16_PEAK = 1979e12 / 2  # datasheet BFLOAT16 Tensor Core, sparse figure halved
H100_FP32 = 67e12  # datasheet FP32 (CUDA cores): the vector peak
H100_BW = 3.35e12  # datasheet GPU memory bandwidth, bytes/s


@pytest.fixture(scope="module")
def model():
    return DeepseekOCRAnalyticModel.for_page(ModelSpec.deepseek_ocr(), GUNDAM, 1700, 2200)


@pytest.fixture(scope="module")
def roof():
    return load_hardware("h100_sxm").roof("bfloat16")


def test_roof_figures_are_the_datasheet(roof):
    assert (roof.matmul_flops, roof.vector_flops, roof.bandwidth) == pytest.approx((H100_BF16_PEAK, H100_FP32, H100_BW))
    assert roof.ridge_intensity == pytest.approx(H100_BF16_PEAK / H100_BW)
    assert "NVIDIA H100 Tensor Core GPU datasheet" in dict(roof.sources)["matmul"]


def test_decode_lm_head_by_hand_is_memory_bound(model, roof):
    """One new token through lm_head: a (1 x hidden) @ (hidden x vocab) matmul reading the whole table."""
    hidden, vocab, tokens, b = 1280, 129280, 1, 2  # DeepSeek-OCR decoder width, vocabulary, bf16 bytes
    flops = 2 * tokens * hidden * vocab
    io = (hidden * vocab + tokens * hidden + tokens * vocab) * b  # weights + input row + logits row
    e = predict(model.decode(), roof).part("lm_head")
    assert (e.flops_matmul, e.flops_other, e.io_bytes) == (flops, 0, io)
    assert e.compute_s == pytest.approx(flops / H100_BF16_PEAK)
    assert e.memory_s == pytest.approx(io / H100_BW)
    assert e.time_s == pytest.approx(max(flops / H100_BF16_PEAK, io / H100_BW)) == pytest.approx(io / H100_BW)
    assert e.bound == "memory"
    assert e.intensity == pytest.approx(flops / io)
    assert e.attainable_flops == pytest.approx(min(H100_BF16_PEAK, flops / io * H100_BW))


def test_prefill_lm_head_by_hand_is_compute_bound(model, roof):
    """lm_head over all T prompt positions: intensity ~ T, above the H100 ridge (~295 FLOP/B)."""
    hidden, vocab, b = 1280, 129280, 2
    tokens = 1 + 903 + 4  # BOS + Gundam image tokens of a 1700x2200 page + "\nFree OCR."
    assert model.seq_len == tokens
    flops = 2 * tokens * hidden * vocab
    io = (hidden * vocab + tokens * hidden + tokens * vocab) * b
    e = predict(model.prefill(), roof).part("lm_head")
    assert (e.flops_matmul, e.io_bytes) == (flops, io)
    assert e.time_s == pytest.approx(flops / H100_BF16_PEAK)
    assert flops / io > roof.ridge_intensity and e.bound == "compute"
    assert e.attainable_flops == pytest.approx(H100_BF16_PEAK)


def test_vector_work_goes_to_the_vector_peak(model, roof):
    """The final RMSNorm in the prefill: 4 FLOPs per element (square, mean, normalise, scale), no matmul."""
    hidden, tokens, b = 1280, model.seq_len, 2
    e = predict(model.prefill(), roof).part("norm")
    assert (e.flops_matmul, e.flops_other) == (0, 4 * tokens * hidden)
    assert e.compute_s == pytest.approx(4 * tokens * hidden / H100_FP32)
    assert e.memory_s == pytest.approx((hidden + 2 * tokens * hidden) * b / H100_BW)  # weight + in + out
    assert e.bound == "memory"


def test_float32_roof_uses_the_cuda_core_peak(model):
    hw = load_hardware("h100_sxm")
    fp32 = DeepseekOCRAnalyticModel.for_page(ModelSpec.deepseek_ocr(), GUNDAM, 1700, 2200, dtype="float32")
    hidden, vocab, tokens = 1280, 129280, fp32.seq_len
    e = predict(fp32.prefill(), hw.roof("float32")).part("lm_head")
    assert e.compute_s == pytest.approx(2 * tokens * hidden * vocab / H100_FP32)
    e_tf32 = predict(fp32.prefill(), hw.roof("float32", allow_tf32=True)).part("lm_head")
    assert e_tf32.compute_s == pytest.approx(2 * tokens * hidden * vocab / (989e12 / 2))


@pytest.fixture
def toy_roof():
    return Roof("toy", "toy", "datasheet", "bfloat16", "bfloat16", 100.0, 10.0, 10.0)  # ridge 10 FLOP/B


def test_bound_classification_around_the_ridge(toy_roof):
    below = estimate(LayerCost(flops_matmul=50, input_bytes=10), toy_roof)  # intensity 5
    above = estimate(LayerCost(flops_matmul=200, input_bytes=10), toy_roof)  # intensity 20
    at = estimate(LayerCost(flops_matmul=100, input_bytes=10), toy_roof)  # on the ridge: compute
    assert (below.bound, above.bound, at.bound) == ("memory", "compute", "compute")
    assert below.time_s == pytest.approx(10 / 10) and above.time_s == pytest.approx(200 / 100)
    assert below.attainable_flops == pytest.approx(5 * 10)  # intensity x bandwidth, under the peak
    assert above.attainable_flops == pytest.approx(100)  # the peak
    vector = estimate(LayerCost(flops_other=50, input_bytes=100), toy_roof)  # 50/10 s compute vs 100/10 s
    assert vector.compute_s == pytest.approx(5) and vector.bound == "memory"
    nothing = estimate(LayerCost(activation_bytes=10**6), toy_roof)  # intermediates only: no I/O, no time
    assert nothing.time_s == 0 and nothing.bound == "none"


def test_a_sum_is_bound_by_where_its_time_goes(toy_roof):
    mem = estimate(LayerCost(flops_matmul=10, input_bytes=30), toy_roof)  # 3 s, memory
    cmp_ = estimate(LayerCost(flops_matmul=100, input_bytes=1), toy_roof)  # 1 s, compute
    total = mem + cmp_
    assert total.time_s == pytest.approx(4) and total.compute_bound_fraction == pytest.approx(0.25)
    assert total.bound == "memory"
    # the sum of unit times is never below the roofline of the summed costs (units do not overlap)
    merged = estimate(LayerCost(flops_matmul=110, input_bytes=31), toy_roof)
    assert total.time_s >= merged.time_s


def _units(stage_cost, roof) -> Estimate:
    """Every unit of a stage, summed independently of the predictor: the root's own work + every node's."""
    total = estimate(stage_cost.root.own, roof)
    for _, node in stage_cost.root.walk():
        total = total + estimate(node.own, roof)
    return total


@pytest.mark.parametrize("stage", ["vision", "prefill", "decode"])
def test_stage_time_is_the_sum_of_its_units(model, roof, stage):
    cost = model.stage(stage)
    pred = predict(cost, roof)
    by_hand = _units(cost, roof)
    assert pred.time_s == pytest.approx(by_hand.time_s, rel=1e-12)
    assert pred.total.compute_bound_s == pytest.approx(by_hand.compute_bound_s, rel=1e-12)
    assert (pred.total.flops, pred.total.io_bytes) == (cost.flops, cost.io_bytes)
    # top-level children of the root add up to the total (the root's own work aside)
    top = [e for path, e in pred.parts.items() if "." not in path]
    assert sum(e.time_s for e in top) + estimate(cost.root.own, roof).time_s == pytest.approx(pred.time_s)
    # every path's figures are its costs on the roof
    for path, e in pred.parts.items():
        assert (e.flops, e.io_bytes) == (cost.parts[path].flops, cost.parts[path].io_bytes), path


def test_stage_figures(model, roof):
    lat = predict_latency(model.stages(), roof)
    assert lat.ttft_s == lat.prefill_s == predict(model.prefill(), roof).time_s
    # the glue between the vision parts (concatenations) has no I/O in the analytic model: no time
    assert lat.vision_s == pytest.approx(sum(lat.vision.part(p).time_s for p in ("sam", "clip", "projector")))
    assert lat.vision_s < lat.prefill_s
    assert lat.tokens_per_s == pytest.approx(1 / lat.decode_s)
    assert lat.context_len == model.context_len == model.seq_len
    # vision parts cost the same in the vision stage and in the prefill (same nodes)
    assert lat.vision.part("sam").time_s == lat.prefill.part("sam").time_s
    # decode is weight-streaming: memory bound, and its time grows with the context (KV cache reads)
    assert lat.decode.total.bound == "memory"
    longer = predict(model.decode(8 * model.seq_len), roof)
    assert longer.time_s > lat.decode_s


def test_summary_and_rows_use_the_part_vocabulary(model, roof):
    pred = predict(model.prefill(), roof)
    summary = pred.summary()
    assert list(summary)[:5] == ["embedding", "sam", "clip", "projector", "decoder"]
    assert "decoder.layer.11" in summary and "lm_head" in summary
    rows = pred.rows()
    by_path = {r["path"]: r for r in rows}
    assert by_path["lm_head"]["alias"] == "lm_head" and by_path["lm_head"]["leaf"]
    assert by_path["model.layers"]["container"]
    assert by_path["model.sam_model.blocks.2.attn.qkv"]["bound"] in ("compute", "memory")


def test_roofline_artifact_round_trip(tmp_path, model, roof):
    hw = load_hardware("h100_sxm")
    lat = predict_latency(model.stages(), roof)
    path = write_roofline(tmp_path / "roofline.json", model, lat, hw)
    art = load_roofline(path)
    assert art.roof == roof and art.model == "deepseek-ocr" and art.dtype == "bfloat16"
    assert art.figures["ttft_s"] == pytest.approx(lat.ttft_s)
    assert art.figures["decode_s_per_token"] == pytest.approx(lat.decode_s)
    assert set(art.convention) == set(CONVENTION)
    assert art.hardware["sources"]["bandwidth"].startswith("NVIDIA H100")
    rows = art.stage_rows("prefill")
    assert {r["path"] for r in rows} == set(model.prefill().parts)

    doc = json.loads(path.read_text())
    assert doc["schema"] == ROOFLINE_SCHEMA and doc["schema_version"] == 2
    # written without a levels payload: the ideal level only, the others absent with a reason
    assert art.levels == ("ideal",) and set(art.absent_levels) == {"kernel", "eager"}
    assert art.unit_levels("prefill")["ideal"]["time_s"] == pytest.approx(lat.ttft_s)
    doc["schema_version"] = 99
    (tmp_path / "v99.json").write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="schema_version 99 is unknown"):
        load_roofline(tmp_path / "v99.json")
    doc["schema_version"] = 1
    del doc["data"]["figures"]["ttft_s"]
    (tmp_path / "missing.json").write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="lacks required field 'ttft_s'"):
        load_roofline(tmp_path / "missing.json")


def test_work_without_bytes_has_infinite_intensity_in_json(toy_roof):
    e = estimate(LayerCost(flops_other=5), toy_roof)
    assert math.isinf(e.intensity) and e.bound == "compute"
    assert to_jsonable(e.to_dict())["intensity"] == "inf"


def test_a_stage_prediction_carries_its_roof_and_convention(model, roof):
    d = predict(model.decode(), roof).to_dict(with_parts=False)
    assert d["roof"]["hardware"] == "h100_sxm" and d["roof"]["matmul_flops"] == pytest.approx(H100_BF16_PEAK)
    assert "NVIDIA H100" in d["roof"]["sources"]["bandwidth"] and d["convention"] == CONVENTION
    assert "parts" not in d and d["total"]["bound"] == "memory"
