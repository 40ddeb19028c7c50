"""The serving math against independent derivations (named dimensions of the tiny and full specs)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_perf_opt.analytic.memory_model import Allowance, max_batch, memory_use
from llm_perf_opt.analytic.moe_batch import MoEShape, expected_distinct
from llm_perf_opt.analytic.serving import serving_point, serving_points
from llm_perf_opt.analytic.sizing import Targets, size
from llm_perf_opt.analytic.time.batch import UnitTable
from llm_perf_opt.analytic.time.hardware import load_hardware
from llm_perf_opt.analytic.time.ideal import predict
from llm_perf_opt.deepseek_ocr_shared.serving import moe_shape, serving_model
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel, parameter_count
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError

GUNDAM = VisionWorkload(base_size=1024, image_size=640, crop_mode=True)


@pytest.fixture(scope="module")
def tiny():
    return DeepseekOCRAnalyticModel.for_page(ModelSpec.tiny(), GUNDAM, 1700, 2200)


@pytest.fixture(scope="module")
def roof():
    return load_hardware("h100_sxm").roof("bfloat16")


def test_expected_distinct():
    assert expected_distinct(64, 6, 1) == pytest.approx(6)
    assert expected_distinct(64, 6, 2) == pytest.approx(64 - 64 * (58 / 64) ** 2)
    shape = MoEShape(11, 64, 6, 100)
    uniform = shape.with_routing([{e: 6 for e in range(64)}] * 11, [64] * 11)  # every expert 6 of 64 tokens
    assert uniform.touched(5) == pytest.approx(shape.touched(5))
    skewed = shape.with_routing([{0: 64, 1: 64, 2: 64, 3: 64, 4: 64, 5: 64}] * 11, [64] * 11)
    assert skewed.touched(100) == pytest.approx(11 * 6)  # the same six experts, whatever the batch


def test_parameter_count_matches_the_twin_and_the_vendor():
    from llm_perf_opt.dsocr.twin.model import build_twin

    for spec in (ModelSpec.tiny(), ModelSpec.deepseek_ocr()):
        twin = build_twin(spec, device="meta")
        assert parameter_count(spec) == sum(p.numel() for p in twin.parameters())
    assert parameter_count(ModelSpec.deepseek_ocr()) == 3_336_106_240  # facts/deepseek_ocr.md, the vendor's


def test_batch_one_is_the_roofline(tiny, roof):
    sm = serving_model(tiny)
    p = serving_point(sm, roof, 1, 2)
    assert p.step_s == pytest.approx(predict(tiny.decode(tiny.seq_len), roof).time_s, rel=1e-12)
    assert p.prefill_s == pytest.approx(predict(tiny.prefill(), roof).time_s, rel=1e-9)


def test_decode_is_affine_in_the_context(tiny, roof):
    sm = serving_model(tiny)
    ctx = tiny.seq_len + 300
    direct = UnitTable.build(tiny.decode(ctx), tiny.batch_rules(), 1)
    inter = sm.decode.at(ctx)
    assert inter.flops == pytest.approx(direct.flops)
    assert float(inter.count @ inter.io) == pytest.approx(float(direct.count @ direct.io))
    assert sm.decode_times([1], roof, ctx).time_s[0] == pytest.approx(predict(tiny.decode(ctx), roof).time_s)


def test_logged_experts_price_their_own_token_counts():
    """`MoEShape.with_logged`: the experts per layer logged forwards touched, at their token counts only."""
    shape = MoEShape(11, 64, 6, 100)
    logged = shape.with_logged({8: 8.2, 32: 10.0}, "a curve's log")
    assert logged.touched_per_layer(8) == pytest.approx(8.2) and logged.touched(32) == pytest.approx(11 * 10.0)
    assert logged.bytes_read(8) == pytest.approx(11 * 8.2 * 100)
    assert logged.touched(16) == pytest.approx(shape.touched(16))  # not logged: uniform
    assert shape.touched(16) > 11 * 10.0
    assert logged.describe()["logged"] == [
        {"tokens": 8.0, "experts_per_layer": 8.2},
        {"tokens": 32.0, "experts_per_layer": 10.0},
    ]
    with pytest.raises(ConfigError, match="experts"):
        shape.with_logged({1: 7.0})  # one token touches top_k = 6 experts at most
    with pytest.raises(ConfigError, match="experts"):
        shape.with_logged({8: 0.0})


def test_decode_weights_at_batch(tiny):
    """Weights a decode step reads at batch B = shared weights + B embedding rows + experts touched by B tokens."""
    d = ModelSpec.tiny().decoder
    sm = serving_model(tiny)
    table = sm.decode.at(tiny.seq_len)
    moe = moe_shape(ModelSpec.tiny(), 2)
    moe_layers = sum(d.is_moe_layer(i) for i in range(d.num_layers))
    expert = 3 * d.hidden_size * d.moe_intermediate_size * 2
    w1 = tiny.decode(tiny.seq_len).weight_bytes
    row = d.hidden_size * 2
    for b in (1, 2, 3, 8):
        expected = (
            (w1 - row - moe_layers * d.num_experts_per_tok * expert)
            + b * row
            + moe_layers * expected_distinct(d.n_routed_experts, d.num_experts_per_tok, b) * expert
        )
        assert table.weight_bytes_at(np.array([b]), moe)[0] == pytest.approx(expected)
    assert table.flops == pytest.approx(tiny.decode(tiny.seq_len).flops)


def test_input_bytes_are_the_forwards_real_input_tensors(tiny):
    """`ServingModel.input_bytes` against the tensors the input builder hands the forward for this page (the
    letter-shaped 1700x2200 synthetic page in Gundam mode: 2x3 crops of 640 + the 1024 global view), in
    bfloat16 as the serving model's dtype; images_spatial_crop stays on the host and is not counted."""
    import torch

    from llm_perf_opt.dsocr.inputs import build_inputs

    inputs = build_inputs(ModelSpec.tiny(), GUNDAM, 1700, 2200)
    kwargs = inputs.forward_kwargs(dtype=torch.bfloat16)
    tensors = [kwargs["input_ids"], kwargs["images_seq_mask"], *[t for pair in kwargs["images"] for t in pair]]
    assert len(tensors) == 4
    assert serving_model(tiny).input_bytes == sum(t.numel() * t.element_size() for t in tensors)
    assert tiny.layout.num_crops == 6  # the crops are part of what was compared


def test_memory_terms(tiny):
    spec = ModelSpec.tiny()
    d = spec.decoder
    sm = serving_model(tiny)
    kv_token = d.num_layers * 2 * d.num_kv_heads * d.head_dim * 2
    m = memory_use(sm, 3, 50, Allowance(0, 0))
    assert m.weights == parameter_count(spec) * 2
    assert m.inputs == 3 * sm.input_bytes
    assert m.total == m.weights + m.kv_cache + m.inputs + m.activations
    assert m.kv_cache in (3 * tiny.seq_len * kv_token, 3 * (tiny.seq_len + 50) * kv_token)
    cap = 2e9
    b = max_batch(sm, 50, cap)
    assert b >= 1
    assert memory_use(sm, b, 50).total <= cap < memory_use(sm, b + 1, 50).total


def test_batching_buys_throughput(tiny, roof):
    points = serving_points(
        serving_model(DeepseekOCRAnalyticModel.for_page(ModelSpec.deepseek_ocr(), GUNDAM, 1700, 2200)),
        roof,
        [1, 8, 64],
        1000,
    )
    tps = [p.static.tokens_per_s for p in points]
    steps = [p.step_s for p in points]
    assert tps[0] < tps[1] < tps[2]
    assert steps[1] < 8 * steps[0] and steps[2] < 8 * steps[1]  # sub-linear: shared weights, touched experts


def test_sizing_requirements_meet_their_target(roof):
    from dataclasses import replace

    full = DeepseekOCRAnalyticModel.for_page(ModelSpec.deepseek_ocr(), GUNDAM, 1700, 2200)
    sm = serving_model(full)
    hw = load_hardware("h100_sxm")
    s = size(sm, hw, roof, Targets(0.02, 0.002, 1e6, 1000))
    req = {r.target: r for r in s.requirements}
    assert len(req) == 3
    ttft = req["ttft_s"]
    fast = replace(roof, matmul_flops=ttft.matmul_tflops * 1e12 * 1.001)
    slow = replace(roof, matmul_flops=ttft.matmul_tflops * 1e12 * 0.99)
    t = lambda r: serving_point(sm, r, 1, 1000).continuous.ttft_s  # noqa: E731
    assert t(fast) <= 0.02 < t(slow)
    assert s.replicas == math.ceil(1e6 / s.pages_per_day_per_device)


def test_bad_input(tiny, roof):
    sm = serving_model(tiny)
    with pytest.raises(ConfigError, match="workload.batch"):
        serving_point(sm, roof, 0, 10)
    with pytest.raises(ConfigError, match="serve.output_tokens"):
        serving_point(sm, roof, 1, 8192)
    with pytest.raises(ConfigError, match="size.tpot_s"):
        size(sm, load_hardware("h100_sxm"), roof, Targets(1, 1e-9, 10, 10))
    with pytest.raises(ConfigError, match="size.ttft_s"):
        Targets(0, 1, 1, 1)


# ------------------------------------------------------------------ issue 34, group 7: size at the edges
@pytest.fixture(scope="module")
def full_serving():
    return serving_model(DeepseekOCRAnalyticModel.for_page(ModelSpec.deepseek_ocr(), GUNDAM, 1700, 2200))


def test_a_device_that_cannot_hold_one_page_says_memory_first(full_serving, roof):
    from dataclasses import replace

    from llm_perf_opt.analytic.serving_text import render_sizing

    small = replace(load_hardware("h100_sxm"), memory_bytes=1e9)
    s = size(full_serving, small, roof, Targets(1, 0.02, 1e6, 1000))
    one_page = memory_use(full_serving, 1, 1000, Allowance(), prefill_batch=1).total
    volume = {r.target: r for r in s.requirements}["pages_per_day"]
    assert s.holds_no_page and s.replicas is None and s.batch == 0
    assert (volume.binds, volume.ratio) == ("memory", pytest.approx(one_page / 1e9))
    text = render_sizing(s).splitlines()
    assert text[1].startswith(f"  h100_sxm cannot serve one page: batch 1 holds {one_page / 1e9:,.2f} GB")
    assert "latency" not in render_sizing(s) and "infx" not in render_sizing(s)


@pytest.mark.parametrize("volume", [1e-9, 1.0, 1e6, 1e11])
def test_replicas_at_least_one_each_at_the_smallest_batch_that_carries_its_share(full_serving, roof, volume):
    from llm_perf_opt.analytic.serving import SECONDS_PER_DAY

    hw = load_hardware("h100_sxm")
    s = size(full_serving, hw, roof, Targets(1, 0.02, volume, 1000))
    assert s.replicas == max(1, math.ceil(volume / s.pages_per_day_per_device - 1e-9))
    share = volume / s.replicas
    n, ctx = 1000, full_serving.mean_decode_context(full_serving.prompt_tokens, 1000)
    pre1 = float(full_serving.prefill_times([1.0], roof).time_s[0])

    def per_day(b: int) -> float:  # continuous batching's pages/day at batch b (analytic.serving)
        step = float(full_serving.decode_times([float(b)], roof, ctx).time_s[0])
        return b / (b * pre1 + (n - 1) * step) * SECONDS_PER_DAY

    assert per_day(s.batch) >= share * (1 - 1e-9)
    assert s.batch == 1 or per_day(s.batch - 1) < share  # the smallest batch that carries it
    volume_row = {r.target: r for r in s.requirements}["pages_per_day"]
    assert volume_row.memory_gb * 1e9 == pytest.approx(
        memory_use(full_serving, s.batch, n, Allowance(), prefill_batch=1).total
    )
    if volume <= 1.0:
        assert s.batch == 1 and s.replicas == 1  # a small volume is served at batch 1, in batch 1's memory


def test_a_volume_beyond_any_fleet_is_refused():
    with pytest.raises(ConfigError, match=r"size.pages_per_day=1e\+30 is invalid: must be at most 1e\+12"):
        Targets(1, 0.02, 1e30, 1000)
