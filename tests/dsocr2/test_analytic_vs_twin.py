"""DeepSeek-OCR 2 analytic model against torch's FlopCounterMode on the tiny twin: vision, prefill and
decode steps, every part and layer, equal (rtol 1e-3, in practice 0); and the encoder's FLOPs as products
of named dimensions."""

from __future__ import annotations

import pytest
import torch

from llm_perf_opt.dsocr2 import cost_formulas
from llm_perf_opt.dsocr2.agreement import check_dsocr2_agreement
from llm_perf_opt.dsocr2.analytic import DeepseekOCR2AnalyticModel
from llm_perf_opt.dsocr2.inputs import build_inputs
from llm_perf_opt.dsocr2.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr2.spec import ModelSpec
from llm_perf_opt.dsocr2.twin import build_twin
from llm_perf_opt.measure import render_table
from llm_perf_opt.model_runtime.measure import measure_forward

pytestmark = pytest.mark.slow
SPEC = ModelSpec.tiny()
CASES = {  # (workload, page): crops (2x3), no crops, the two no-crop modes
    "crop-2x3": (VisionWorkload(), (1700, 2200)),
    "crop-none": (VisionWorkload(), (600, 500)),
    "nocrop-768": (VisionWorkload(base_size=768, image_size=768, crop_mode=False), (1700, 2200)),
    "nocrop-1024": (VisionWorkload(base_size=1024, image_size=1024, crop_mode=False), (1700, 2200)),
}


@pytest.fixture(scope="module")
def twin():
    return build_twin(SPEC, dtype=torch.float32, seed=0)


@pytest.mark.parametrize("case", list(CASES))
def test_every_stage_and_part_matches_measured(twin, case):
    workload, page = CASES[case]
    inputs = build_inputs(SPEC, workload, *page)
    steps = (1, 3) if case == "crop-2x3" else ()
    measured = measure_forward(twin, inputs.forward_kwargs(dtype=torch.float32), steps)
    analytic = DeepseekOCR2AnalyticModel(SPEC, inputs.layout, inputs.seq_len, dtype="float32")
    v = check_dsocr2_agreement(
        analytic, measured.prefill, measured.decode, rtol=1e-3, kv_cache_bytes=measured.kv_cache_bytes
    )
    assert v.passed, render_table(v, parts="all", max_rows=500)
    assert len(v.checks) == 2 + len(steps)
    vision, prefill = v.checks[0].total_row, v.checks[1].total_row
    assert vision.measured > 0 and prefill.measured > vision.measured
    enc_rows = [r for r in v.checks[0].rows if r.part.startswith("model.qwen2_model.model.model.layers.")]
    assert len(enc_rows) > 10 and all(r.measured > 0 for r in enc_rows if r.part.endswith("self_attn"))
    if steps:
        assert len(v.kv_cache) == 1 + max(steps)  # the cache after the prefill and after every step run
        assert "model.qwen2_model" not in measured.decode[inputs.seq_len].by_module  # vision skipped in decode


def _encoder_pass_flops(e, batch: int, n: int) -> int:
    """Matmul FLOPs of one encoder call on `batch` views of n SAM tokens: T = 2n tokens per view."""
    t = 2 * n
    kv = e.num_kv_heads * e.head_dim
    proj = 2 * batch * t * e.hidden_size * (e.hidden_size + 2 * kv + e.hidden_size)  # q, k, v, o
    attn = 2 * 2 * batch * e.num_heads * t * t * e.head_dim  # Q·Kᵀ and P·V over all T keys
    mlp = 3 * 2 * batch * t * e.hidden_size * e.intermediate_size
    rope_table = 2 * (e.head_dim // 2) * t  # the (1, d/2, 1)·(1, 1, T) bmm, once per call
    return e.num_layers * (proj + attn + mlp) + rope_table


def test_full_size_encoder_flops_are_products_of_dimensions():
    spec = ModelSpec.deepseek_ocr2()
    layout = compute_view_layout(VisionWorkload(), 1700, 2200)  # 2x3 crops
    vision = DeepseekOCR2AnalyticModel(spec, layout).vision()
    crops, glob = 6, 1
    crop_tokens, global_tokens = (768 // 64) ** 2, (1024 // 64) ** 2
    expected = _encoder_pass_flops(spec.encoder, crops, crop_tokens) + _encoder_pass_flops(
        spec.encoder, glob, global_tokens
    )
    assert vision.parts["model.qwen2_model"].flops_matmul == expected
    p = spec.projector
    assert (
        vision.parts["model.projector"].flops_matmul
        == 2 * (crops * crop_tokens + global_tokens) * p.input_dim * p.n_embed
    )
    assert layout.image_tokens == crops * crop_tokens + global_tokens + 1


def test_v2_classes_are_costed_under_the_family_prefix(twin):
    classes = {type(m).__name__ for m in twin.modules()}
    assert {"Qwen2DecoderLayer", "Qwen2SdpaAttention", "Qwen2Decoder2Encoder"} <= classes
    assert cost_formulas.unsupported(sorted(classes)) == {}
    assert cost_formulas.key("Qwen2DecoderLayer") == "dsocr2.Qwen2DecoderLayer"
    assert cost_formulas.key("ImageEncoderViT") == "dsocr.ImageEncoderViT"  # shared with v1, under its namespace
    assert cost_formulas.key("Linear") == "Linear"  # torch.nn: shared by every family
    assert cost_formulas.unsupported(["Qwen2DecoderLayer", "NoSuchBlock"]) == {"NoSuchBlock": 1}


def test_the_image_checks_read_their_images():
    """The forward's two `torch.sum(...).item()` checks read the crop tensor (six 768-pixel crops) and the 1024-pixel
    global view: one add per element read (not per byte), the image's bytes, a 0-d result."""
    m = DeepseekOCR2AnalyticModel(ModelSpec.deepseek_ocr2(), compute_view_layout(VisionWorkload(), 1700, 2200))
    glue = dict(m.prefill().root.children)["model"].own  # DeepseekOCR2Model.forward's own ops
    b = m.dtype_bytes
    sums = sorted(
        (flops, nbytes, out)
        for (kind, _, flops, nbytes, out), n in glue.kernels.counts.items()
        for _ in range(n)
        if kind == "reduction"
    )
    images = sorted((3 * 1024 * 1024, 6 * 3 * 768 * 768))
    assert sums == [(n, n * b + b, b) for n in images]
